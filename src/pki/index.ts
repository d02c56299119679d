export {
  type CertificateAuthority,
  certificateNames,
  createCertificateAuthority,
  createSigningKeyPair,
  daysUntilExpiry,
  type IssueOptions,
  issueCertificate,
  type KeyPairPem,
  loadCertificateAuthority,
} from "./certificates.js";
