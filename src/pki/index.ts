export {
  type CertificateAuthority,
  createCertificateAuthority,
  createSigningKeyPair,
  daysUntilExpiry,
  type IssueOptions,
  issueCertificate,
  type KeyPairPem,
  loadCertificateAuthority,
} from "./certificates.js";
