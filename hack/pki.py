"""PKI and kubeconfig for the local control plane: a CA, the kube-apiserver serving cert,
an admin client cert in system:masters, and the service-account signing keys.

EC P-256 keys throughout: every component accepts them and they take microseconds to make.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import os
import ssl
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SERVICE_IP = "10.0.0.1"
CLUSTER_NAME = "karpy-local"


@dataclass(frozen=True)
class Pki:
    """Paths of the certificates and keys the components and clients use."""

    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    sa_key: Path
    sa_pub: Path

    @classmethod
    def in_dir(cls, directory: Path) -> Pki:
        return cls(
            ca_cert=directory / "ca.crt",
            ca_key=directory / "ca.key",
            serving_cert=directory / "apiserver.crt",
            serving_key=directory / "apiserver.key",
            admin_cert=directory / "admin.crt",
            admin_key=directory / "admin.key",
            sa_key=directory / "sa.key",
            sa_pub=directory / "sa.pub",
        )

    def exists(self) -> bool:
        return all(Path(p).exists() for p in vars(self).values())

    def generate(self) -> None:
        """Write a fresh CA, apiserver serving cert, admin client cert and service-account keys."""
        self.ca_cert.parent.mkdir(parents=True, exist_ok=True)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "karpy-local-ca")])
        ca_cert = (
            _cert_builder(ca_name, ca_name, ca_key.public_key(), ca=True)
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
            )
            .sign(ca_key, hashes.SHA256())
        )
        _write_key(self.ca_key, ca_key)
        _write_cert(self.ca_cert, ca_cert)

        names: list[x509.GeneralName] = [
            x509.DNSName(n)
            for n in (
                "localhost",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
            )
        ]
        names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ("127.0.0.1", SERVICE_IP)]
        self._leaf(
            ca_cert,
            ca_key,
            subject=x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]),
            usage=ExtendedKeyUsageOID.SERVER_AUTH,
            sans=names,
            cert_path=self.serving_cert,
            key_path=self.serving_key,
        )
        self._leaf(
            ca_cert,
            ca_key,
            subject=x509.Name(
                [
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters"),
                    x509.NameAttribute(NameOID.COMMON_NAME, "admin"),
                ]
            ),
            usage=ExtendedKeyUsageOID.CLIENT_AUTH,
            sans=None,
            cert_path=self.admin_cert,
            key_path=self.admin_key,
        )
        sa_key = ec.generate_private_key(ec.SECP256R1())
        _write_key(self.sa_key, sa_key)
        self.sa_pub.write_bytes(
            sa_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )

    @staticmethod
    def _leaf(
        ca_cert: x509.Certificate,
        ca_key: ec.EllipticCurvePrivateKey,
        *,
        subject: x509.Name,
        usage: x509.ObjectIdentifier,
        sans: list[x509.GeneralName] | None,
        cert_path: Path,
        key_path: Path,
    ) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            _cert_builder(subject, ca_cert.subject, key.public_key(), ca=False)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                critical=False,
            )
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        _write_key(key_path, key)
        _write_cert(cert_path, builder.sign(ca_key, hashes.SHA256()))

    def client_ssl_context(self) -> ssl.SSLContext:
        """TLS context that trusts the CA and presents the admin client certificate."""
        ctx = ssl.create_default_context(cafile=str(self.ca_cert))
        ctx.load_cert_chain(str(self.admin_cert), str(self.admin_key))
        return ctx


def _cert_builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey, *, ca: bool
) -> x509.CertificateBuilder:
    """A year's certificate for signatures; a CA's also signs certificates and CRLs."""
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=ca,
                crl_sign=ca,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    )


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    data = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def write_kubeconfig(path: Path, *, server: str, pki: Pki) -> None:
    """Admin kubeconfig with the credentials embedded, so it can be copied anywhere."""

    def b64(p: Path) -> str:
        return base64.b64encode(p.read_bytes()).decode()

    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": CLUSTER_NAME,
                "cluster": {"server": server, "certificate-authority-data": b64(pki.ca_cert)},
            }
        ],
        "users": [
            {
                "name": "admin",
                "user": {
                    "client-certificate-data": b64(pki.admin_cert),
                    "client-key-data": b64(pki.admin_key),
                },
            }
        ],
        "contexts": [{"name": CLUSTER_NAME, "context": {"cluster": CLUSTER_NAME, "user": "admin"}}],
        "current-context": CLUSTER_NAME,
        "preferences": {},
    }
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(config, f, sort_keys=False)
    tmp.replace(path)
