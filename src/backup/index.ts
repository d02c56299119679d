/** The backup capability (document 000, §3.3): its only public entry. */

export { DEFAULT_PART_SIZE, S3ObjectStore, type S3Settings } from "./store/s3.js";
export {
  ObjectNotFound,
  type ObjectStore,
  type PutOptions,
  type PutResult,
  type StoredObject,
} from "./store/spi.js";
