/**
 * The provider's side of peer certificate renewal: approves a peer's CertificateSigningRequest
 * when it follows the peering rules (peer-certificates.ts), and leaves every other one alone.
 */
import { CertificatesV1Api, type V1CertificateSigningRequest } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { type CertificateRequestSummary, parseCertificateRequest } from "../identity/index.js";
import {
  type ClusterClient,
  Controller,
  describeError,
  type Informer,
  isConflict,
  isNotFound,
  objectKey,
  type ReconcileContext,
  type ReconcileResult,
  reconcileDone,
} from "../kube/index.js";
import type { Tenant } from "../tenants/index.js";
import { PEER_CERTIFICATE_SECONDS, PEER_CLUSTER_ID_LABEL } from "./peer.js";
import { decidePeerCertificate, isDecided, PEER_USERNAME_PREFIX } from "./peer-certificates.js";

/** The reason on the Approved condition of the requests this approves. */
export const PEER_APPROVAL_REASON = "TenantryPeering";

/** The peer tenant owned by `username`: labelled with its cluster id, owned by it, not being deleted. */
export function findPeerTenant(tenants: Tenant[], username: string): Tenant | undefined {
  const clusterId = username.slice(PEER_USERNAME_PREFIX.length);
  return tenants.find(
    (t) =>
      t.metadata?.labels?.[PEER_CLUSTER_ID_LABEL] === clusterId &&
      !t.metadata?.deletionTimestamp &&
      t.spec.owners?.some((o) => o.kind === "User" && o.name === username),
  );
}

export interface PeerCertificateApproverOptions {
  client: ClusterClient;
  /** CertificateSigningRequests of the kube-apiserver-client signer. */
  csrs: Informer<V1CertificateSigningRequest>;
  tenants: Informer<Tenant>;
  logger: Logger;
}

export class PeerCertificateApprover {
  private readonly controller: Controller;
  private readonly api: CertificatesV1Api;
  /** Requests already said to be left alone, so each is logged once. */
  private readonly refused = new Set<string>();

  constructor(private readonly options: PeerCertificateApproverOptions) {
    this.api = options.client.kubeConfig.makeApiClient(CertificatesV1Api);
    this.controller = new Controller({
      name: "peer-certificates-approval",
      workers: 1,
      logger: options.logger,
      reconcile: (_key, ctx) => this.reconcile(ctx),
    });
    const key = (csr: V1CertificateSigningRequest) =>
      objectKey(options.client.name, undefined, csr.metadata!.name!);
    this.controller.watch(options.csrs, (csr) =>
      csr.spec?.username?.startsWith(PEER_USERNAME_PREFIX) ? [key(csr)] : [],
    );
    // A request that came before its tenant was seen is looked at again when the tenant is.
    this.controller.watch(options.tenants, (tenant) => {
      const owners = new Set(tenant.spec.owners?.map((o) => o.name) ?? []);
      return options.csrs
        .list()
        .filter((csr) => owners.has(csr.spec?.username ?? "") && !isDecided(csr))
        .map(key);
    });
  }

  start(): Promise<void> {
    return this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
    this.refused.clear();
  }

  private async reconcile(ctx: ReconcileContext): Promise<ReconcileResult> {
    const name = ctx.ref.name;
    const csr = this.options.csrs.get(undefined, name);
    if (!csr) {
      this.refused.delete(name);
      return reconcileDone();
    }
    let request: CertificateRequestSummary | undefined;
    let parseError: string | undefined;
    try {
      request = await parseCertificateRequest(Buffer.from(csr.spec.request, "base64").toString());
    } catch (err) {
      parseError = describeError(err);
    }
    const tenants = this.options.tenants.list();
    const decision = decidePeerCertificate(
      csr,
      request,
      parseError,
      (username) => findPeerTenant(tenants, username),
      PEER_CERTIFICATE_SECONDS,
    );
    if (decision.kind === "ignore") return reconcileDone();
    if (decision.kind === "refuse") {
      if (!this.refused.has(name)) {
        this.refused.add(name);
        ctx.logger.warn(
          { csr: name, username: csr.spec.username, reason: decision.reason },
          "peer certificate request not approved (left for other approvers)",
        );
      }
      return reconcileDone();
    }
    const approved: V1CertificateSigningRequest = {
      ...csr,
      status: {
        ...csr.status,
        conditions: [
          ...(csr.status?.conditions ?? []),
          {
            type: "Approved",
            status: "True",
            reason: PEER_APPROVAL_REASON,
            message: decision.message,
            lastUpdateTime: new Date(),
          },
        ],
      },
    };
    try {
      await this.api.replaceCertificateSigningRequestApproval({ name, body: approved });
    } catch (err) {
      // Gone, or changed meanwhile (another approver): the informer brings the current state.
      if (isNotFound(err) || isConflict(err)) return reconcileDone();
      throw err;
    }
    ctx.logger.info(
      { csr: name, username: csr.spec.username, tenant: decision.tenant },
      "approved a peer certificate renewal",
    );
    return reconcileDone();
  }
}
