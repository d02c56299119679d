export {
  requestUserCertificate,
  type UserCertificateOptions,
  type UserCredentials,
  userKubeconfig,
} from "./user-certificates.js";
