// @peculiar/x509 resolves its algorithms through tsyringe, which needs the reflect polyfill loaded first.
import "reflect-metadata";
import { webcrypto } from "node:crypto";
import * as x509 from "@peculiar/x509";

type CryptoKey = webcrypto.CryptoKey;

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const keyAlgorithm: webcrypto.EcKeyGenParams = { name: "ECDSA", namedCurve: "P-256" };
const signingAlgorithm: webcrypto.EcdsaParams = { name: "ECDSA", hash: "SHA-256" };
const DAY_MS = 24 * 60 * 60 * 1000;

/** A certificate with its private key, both PEM-encoded, as Kubernetes components read them. */
export interface KeyPairPem {
  certPem: string;
  keyPem: string;
}

export interface CertificateAuthority extends KeyPairPem {
  cert: x509.X509Certificate;
  privateKey: CryptoKey;
}

export interface IssueOptions {
  commonName: string;
  organizations?: string[];
  dnsNames?: string[];
  ipAddresses?: string[];
  usage: "server" | "client" | "server+client";
  validDays?: number;
}

function subjectName(commonName: string, organizations: string[] = []): string {
  const escapeValue = (v: string) => v.replace(/([,+"\\<>;=])/g, "\\$1");
  return [`CN=${escapeValue(commonName)}`, ...organizations.map((o) => `O=${escapeValue(o)}`)].join(", ");
}

function randomSerial(): string {
  // Positive 16-byte serial: clear the top bit so DER does not read it as negative.
  const bytes = webcrypto.getRandomValues(new Uint8Array(16));
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  return Buffer.from(bytes).toString("hex");
}

async function exportKeyPem(key: CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey("pkcs8", key);
  return x509.PemConverter.encode(der, "PRIVATE KEY");
}

function validity(validDays: number): { notBefore: Date; notAfter: Date } {
  // Backdate a little so that clocks slightly behind still accept the certificate; the lifetime
  // counts from now, so that a certificate of a few minutes (rotation tests) is not born expired.
  const now = Date.now();
  return { notBefore: new Date(now - 5 * 60 * 1000), notAfter: new Date(now + validDays * DAY_MS) };
}

export async function createCertificateAuthority(
  commonName: string,
  validDays = 3650,
): Promise<CertificateAuthority> {
  const keys = await webcrypto.subtle.generateKey(keyAlgorithm, true, ["sign", "verify"]);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: subjectName(commonName),
    ...validity(validDays),
    keys,
    signingAlgorithm,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return {
    cert,
    privateKey: keys.privateKey,
    certPem: cert.toString("pem"),
    keyPem: await exportKeyPem(keys.privateKey),
  };
}

export async function loadCertificateAuthority(pair: KeyPairPem): Promise<CertificateAuthority> {
  const cert = new x509.X509Certificate(pair.certPem);
  const privateKey = await webcrypto.subtle.importKey(
    "pkcs8",
    x509.PemConverter.decodeFirst(pair.keyPem),
    keyAlgorithm,
    true,
    ["sign"],
  );
  return { ...pair, cert, privateKey };
}

export async function issueCertificate(ca: CertificateAuthority, options: IssueOptions): Promise<KeyPairPem> {
  const keys = await webcrypto.subtle.generateKey(keyAlgorithm, true, ["sign", "verify"]);
  const extendedUsages: x509.ExtendedKeyUsage[] = [];
  if (options.usage !== "client") extendedUsages.push(x509.ExtendedKeyUsage.serverAuth);
  if (options.usage !== "server") extendedUsages.push(x509.ExtendedKeyUsage.clientAuth);
  const altNames: x509.JsonGeneralName[] = [
    ...(options.dnsNames ?? []).map((value) => ({ type: "dns" as const, value })),
    ...(options.ipAddresses ?? []).map((value) => ({ type: "ip" as const, value })),
  ];
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(
      x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
      true,
    ),
    new x509.ExtendedKeyUsageExtension(extendedUsages),
    await x509.AuthorityKeyIdentifierExtension.create(ca.cert.publicKey),
  ];
  if (altNames.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(altNames));
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: subjectName(options.commonName, options.organizations),
    issuer: ca.cert.subject,
    ...validity(options.validDays ?? 365),
    publicKey: keys.publicKey,
    signingKey: ca.privateKey,
    signingAlgorithm,
    extensions,
  });
  return { certPem: cert.toString("pem"), keyPem: await exportKeyPem(keys.privateKey) };
}

/** A bare key pair in PEM (PKCS#8 private, SPKI public), e.g. for service-account token signing. */
export async function createSigningKeyPair(): Promise<{ privateKeyPem: string; publicKeyPem: string }> {
  const keys = await webcrypto.subtle.generateKey(keyAlgorithm, true, ["sign", "verify"]);
  const spki = await webcrypto.subtle.exportKey("spki", keys.publicKey);
  return {
    privateKeyPem: await exportKeyPem(keys.privateKey),
    publicKeyPem: x509.PemConverter.encode(spki, "PUBLIC KEY"),
  };
}

/** Days until the certificate expires (negative when it already has). */
export function daysUntilExpiry(certPem: string, now = new Date()): number {
  return (new x509.X509Certificate(certPem).notAfter.getTime() - now.getTime()) / DAY_MS;
}

/** Whether `certPem` was signed by the CA certificate `caPem` (its signature only, not its dates). */
export async function isIssuedBy(certPem: string, caPem: string): Promise<boolean> {
  try {
    const ca = new x509.X509Certificate(caPem);
    return await new x509.X509Certificate(certPem).verify({ publicKey: ca.publicKey, signatureOnly: true });
  } catch {
    return false;
  }
}

/** When a certificate (PEM) starts and stops being valid. */
export function certificateValidity(certPem: string): { notBefore: Date; notAfter: Date } {
  const cert = new x509.X509Certificate(certPem);
  return { notBefore: cert.notBefore, notAfter: cert.notAfter };
}

/** DNS names and IP addresses a certificate is valid for (its subjectAltName). */
export function certificateNames(certPem: string): { dnsNames: string[]; ipAddresses: string[] } {
  const cert = new x509.X509Certificate(certPem);
  const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
  const names = san?.names.toJSON() ?? [];
  return {
    dnsNames: names.filter((n) => n.type === "dns").map((n) => n.value),
    ipAddresses: names.filter((n) => n.type === "ip").map((n) => n.value),
  };
}

/** A new key pair and a PKCS#10 request for it (CN = user, O = groups), both PEM. */
export async function createCertificateRequest(
  commonName: string,
  organizations: string[] = [],
): Promise<{ csrPem: string; keyPem: string }> {
  const keys = await webcrypto.subtle.generateKey(keyAlgorithm, true, ["sign", "verify"]);
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: subjectName(commonName, organizations),
    keys,
    signingAlgorithm,
  });
  return { csrPem: csr.toString("pem"), keyPem: await exportKeyPem(keys.privateKey) };
}

/** Who a PKCS#10 request (PEM) asks to be: its subject's common name and organizations. */
export function certificateRequestSubject(csrPem: string): { commonName?: string; organizations: string[] } {
  const name = new x509.Pkcs10CertificateRequest(csrPem).subjectName;
  return { commonName: name.getField("CN")[0], organizations: name.getField("O") };
}

/** Who a certificate (PEM) names: its subject's common name and organizations, and its expiry. */
export function certificateSubject(certPem: string): {
  commonName?: string;
  organizations: string[];
  notAfter: Date;
} {
  const cert = new x509.X509Certificate(certPem);
  return {
    commonName: cert.subjectName.getField("CN")[0],
    organizations: cert.subjectName.getField("O"),
    notAfter: cert.notAfter,
  };
}
