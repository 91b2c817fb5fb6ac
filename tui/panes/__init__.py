"""One folder per area of the workbench: streams, consumers, pull hand, tools."""
