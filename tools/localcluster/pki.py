"""Certificates and keys of the local cluster (one CA, loopback only)."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_FOR = datetime.timedelta(days=3650)


def _write_key(key, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _load(pki: Path, name: str):
    key = serialization.load_pem_private_key((pki / f"{name}.key").read_bytes(), None)
    cert = x509.load_pem_x509_certificate((pki / f"{name}.crt").read_bytes())
    return key, cert


def ensure_ca(pki: Path) -> None:
    if (pki / "ca.crt").exists():
        return
    pki.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gpucloud-localcluster-ca")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALID_FOR)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
        )
        .sign(key, hashes.SHA256())
    )
    _write_key(key, pki / "ca.key")
    (pki / "ca.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def ensure_cert(
    pki: Path,
    name: str,
    common_name: str,
    organizations: tuple[str, ...] = (),
    server_names: tuple[str, ...] = (),
    client: bool = True,
) -> tuple[Path, Path]:
    """A leaf certificate signed by the cluster CA; reused when it exists."""
    crt, key_path = pki / f"{name}.crt", pki / f"{name}.key"
    if crt.exists() and key_path.exists():
        return crt, key_path
    ca_key, ca_cert = _load(pki, "ca")
    key = ec.generate_private_key(ec.SECP256R1())
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    now = datetime.datetime.now(datetime.UTC)
    usages = [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(attrs))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALID_FOR)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
    )
    if server_names:
        usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
        sans: list[x509.GeneralName] = []
        for san in server_names:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(san)))
            except ValueError:
                sans.append(x509.DNSName(san))
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    _write_key(key, key_path)
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return crt, key_path


def ensure_service_account_keys(pki: Path) -> None:
    if (pki / "sa.key").exists():
        return
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_key(key, pki / "sa.key")
    (pki / "sa.pub").write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
