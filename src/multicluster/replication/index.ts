/** Deployment replication (document 004, chapter 7): the ReplicatedDeployment controller. */
export { ReplicatedDeploymentController, type ReplicationControllerOptions } from "./controller.js";
