"""Certificates made at test time for the TLS tests (nothing generated is
committed): a CA, a server certificate for 127.0.0.1/localhost, and client
certificates whose e-mail, DNS name or subject nats-server's
``verify_and_map`` maps to users. Uses the ``cryptography`` package (the
``test`` extra); the broker itself only needs Python's ``ssl``."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = []
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
    return x509.Name(attrs)


def _write_key(key, path: Path) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))


@dataclass
class PKI:
    dir: Path
    ca: Path
    server_cert: Path
    server_key: Path

    def client(self, cn: str, *, org: str | None = None, email: str | None = None, dns: str | None = None,
               signer: str = "ca") -> tuple[Path, Path]:
        """A client certificate (and key) signed by the CA (or by a CA of its
        own when ``signer`` is "other"), with the given subject and SANs."""
        ca_cert, ca_key = self._ca if signer == "ca" else _make_ca("Other CA")
        key = ec.generate_private_key(ec.SECP256R1())
        sans: list[x509.GeneralName] = []
        if email:
            sans.append(x509.RFC822Name(email))
        if dns:
            sans.append(x509.DNSName(dns))
        b = _builder(_name(cn, org), ca_cert.subject, key.public_key())
        b = b.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        if sans:
            b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = b.sign(ca_key, hashes.SHA256())
        stem = self.dir / f"client-{cn.replace(' ', '_')}-{signer}"
        cp, kp = stem.with_suffix(".pem"), stem.with_suffix(".key")
        cp.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(key, kp)
        return cp, kp

    def server(self, *dns: str, rsa_bits: int | None = None) -> tuple[Path, Path]:
        """Another server certificate (and key) signed by the CA, for the DNS
        names given (and 127.0.0.1), its key EC P-256 or RSA of ``rsa_bits``."""
        ca_cert, ca_key = self._ca
        key = rsa.generate_private_key(65537, rsa_bits) if rsa_bits else ec.generate_private_key(ec.SECP256R1())
        b = _builder(_name(dns[0] if dns else "127.0.0.1"), ca_cert.subject, key.public_key())
        b = b.add_extension(x509.SubjectAlternativeName(
            [x509.DNSName(d) for d in dns] + [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        b = b.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        cert = b.sign(ca_key, hashes.SHA256())
        stem = self.dir / f"server-{'-'.join(dns) or 'ip'}-{rsa_bits or 'ec'}"
        cp, kp = stem.with_suffix(".pem"), stem.with_suffix(".key")
        cp.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(key, kp)
        return cp, kp

    def client_context(self, cert: tuple[Path, Path] | None = None) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(self.ca))
        if cert is not None:
            ctx.load_cert_chain(str(cert[0]), str(cert[1]))
        return ctx


def _builder(subject: x509.Name, issuer: x509.Name, public_key) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.timezone.utc)
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1)))


def _make_ca(cn: str):
    key = ec.generate_private_key(ec.SECP256R1())
    b = _builder(_name(cn), _name(cn), key.public_key())
    b = b.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    b = b.add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                      content_commitment=False, key_encipherment=False, data_encipherment=False,
                                      key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
    return b.sign(key, hashes.SHA256()), key


def make_pki(directory: Path) -> PKI:
    directory.mkdir(parents=True, exist_ok=True)
    ca_cert, ca_key = _make_ca("natslab test CA")
    ca = directory / "ca.pem"
    ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    key = ec.generate_private_key(ec.SECP256R1())
    b = _builder(_name("localhost"), ca_cert.subject, key.public_key())
    b = b.add_extension(x509.SubjectAlternativeName(
        [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
    b = b.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    cert = b.sign(ca_key, hashes.SHA256())
    sc, sk = directory / "server-cert.pem", directory / "server-key.pem"
    sc.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(key, sk)
    pki = PKI(directory, ca, sc, sk)
    pki._ca = (ca_cert, ca_key)
    return pki
