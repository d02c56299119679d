import {
  allStarted,
  applyObject,
  type Capability,
  type SharedContext,
  Slot,
  StartedState,
} from "../kube/index.js";
import { NODES } from "../nodes/index.js";
import { isSystemComponent, TENANT_INFORMERS, tenantryIdentity } from "../tenants/index.js";
import type { AdmissionCheck, AdmissionSource } from "../webhooks/index.js";
import { Authorizer, accessGrantClusterRoles } from "./authorizer.js";
import { accessGrantWebhook } from "./grant-admission.js";

/** Who may do what: kube-apiserver's authorization webhook answers, and the AccessGrants. */
export const AUTHORIZER = new Slot<Authorizer>("the authorizer");

/** Authorization (tenant roles, AccessGrants, worker nodes) and the AccessGrants' admission check. */
export class AccessCapability implements Capability, AdmissionSource {
  readonly name = "access";
  readonly dependsOn = ["tenants", "nodes"];
  private readonly started = new StartedState<SharedContext>("access");

  async start(context: SharedContext): Promise<undefined> {
    const { client, namespace, logger, metrics, lifecycle, values } = context;
    const systemIdentity = tenantryIdentity("", namespace);
    const authorizer = new Authorizer({
      client,
      informers: values.get(TENANT_INFORMERS),
      isSystem: (requester) => isSystemComponent(requester, systemIdentity),
      workerNodes: values.get(NODES).informers.workerNodes,
      logger,
      registry: metrics,
    });
    await allStarted([
      ...accessGrantClusterRoles.map((role) => applyObject(client, role)),
      authorizer.start().then(() => lifecycle.started("authorizer", authorizer)),
    ]);
    values.set(AUTHORIZER, authorizer);
    this.started.set(context);
    return undefined;
  }

  admissionChecks(): AdmissionCheck[] {
    return [accessGrantWebhook(this.started.get().client.kubeConfig)];
  }
}
