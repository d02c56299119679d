export {
  type CertificateAuthority,
  certificateNames,
  createCertificateAuthority,
  createCertificateRequest,
  createSigningKeyPair,
  daysUntilExpiry,
  type IssueOptions,
  issueCertificate,
  type KeyPairPem,
  loadCertificateAuthority,
} from "./certificates.js";
