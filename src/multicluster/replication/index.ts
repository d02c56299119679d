/** Deployment replication (document 004, chapter 7): the ReplicatedDeployment controller and its benchmark. */
export {
  BENCHMARK_RUN_LABEL,
  benchmarkNodes,
  benchmarkReplication,
  type ReplicationBenchmarkOptions,
  type ReplicationBenchmarkResult,
} from "./benchmark.js";
export { ReplicatedDeploymentController, type ReplicationControllerOptions } from "./controller.js";
