export { errorMessage, UserError } from "./errors.js";
export { cacheRoot, defaultClustersDir } from "./paths.js";
export { createProgress, type Progress } from "./progress.js";
export {
  addAmounts,
  formatQuantity,
  parseQuantity,
  QuantityError,
  type ResourceAmounts,
  type ResourceList,
  type ResourceListInput,
  toAmounts,
  toResourceList,
} from "./quantity.js";
