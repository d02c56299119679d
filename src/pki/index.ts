export {
  type CertificateAuthority,
  certificateNames,
  certificateRequestSubject,
  certificateSubject,
  createCertificateAuthority,
  createCertificateRequest,
  createSigningKeyPair,
  daysUntilExpiry,
  type IssueOptions,
  issueCertificate,
  type KeyPairPem,
  loadCertificateAuthority,
} from "./certificates.js";
