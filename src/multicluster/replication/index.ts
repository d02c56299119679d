/** Deployment replication (Liqo thesis, chapter 7): the ReplicatedDeployment controller. */
export { ReplicatedDeploymentController, type ReplicationControllerOptions } from "./controller.js";
