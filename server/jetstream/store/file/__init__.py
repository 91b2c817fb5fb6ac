"""The file store (``store.FileStore``): one stream's messages in an
append-only log of checksummed blocks on disk, with a compact index in
memory. ``blocks`` knows the on-disk formats; the store owns three objects,
each in its module: the opening of a store (``recovery.Recovery``), how
records reach the disk and space is taken back (``reclaim.Reclaim``) and
the subject index (``subjects.SubjectSequences``). Nothing is imported
here."""
