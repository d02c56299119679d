/**
 * The consumer's side of peer certificate renewal, per Peering: the certificate in the credentials
 * Secret is exported as an expiry metric and, when less than a fraction of its lifetime is left,
 * replaced by a new one the provider signs for a fresh key (asked for with the current
 * certificate, as a kubelet renews its own). The Secret changes only once the new certificate is
 * in hand, so a failed renewal leaves the working kubeconfig as it was; the clients built from
 * the Secret follow it without a restart.
 */
import { createPrivateKey, randomBytes, X509Certificate } from "node:crypto";
import { CertificatesV1Api, type V1Secret } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { Gauge, Registry } from "prom-client";
import { parse, stringify } from "yaml";
import {
  type ClusterClient,
  Controller,
  certificateExpiryGauge,
  clientCertificateRequest,
  describeError,
  exponentialDelay,
  type Informer,
  isConflict,
  objectKey,
  type ReconcileContext,
  type ReconcileResult,
  reconcileDone,
  recordCertificateEvent,
  requeueAfter,
  waitForIssuedCertificate,
} from "../kube/index.js";
import { createCertificateRequest } from "../pki/index.js";
import { TENANTS_API_VERSION } from "../tenants/index.js";
import type { Peering } from "./api/peering.js";
import { PEER_CERTIFICATE_SECONDS } from "./peer.js";
import { certificateSecondsOf, renewalSchedule, renewFractionOf } from "./peer-certificates.js";
import { KUBECONFIG_KEY, loadPeerCredentials } from "./remote.js";

/** The longest wait before a certificate is looked at again (timers beyond ~24 days overflow). */
const MAX_WAIT_MS = 12 * 3600_000;
const FIRST_RETRY_MS = 10_000;
const MAX_RETRY_MS = 10 * 60_000;

export interface PeerCertificateRenewerOptions {
  client: ClusterClient;
  peerings: Informer<Peering>;
  peerSecrets: Informer<V1Secret>;
  /** tenantry's namespace: where the credentials Secrets are. */
  namespace: string;
  logger: Logger;
  registry?: Registry;
  /** How long to wait for the provider to sign a request. Default 60 s. */
  signTimeoutMs?: number;
  now?: () => number;
}

/** The metric label of a peering's certificate. */
export function peerCertificateLabel(peering: string): string {
  return `peer/${peering}`;
}

/** The kubeconfig with its current user's client certificate and key replaced (everything else kept). */
export function withClientCertificate(kubeconfig: string, certPem: string, keyPem: string): string {
  const config = parse(kubeconfig) as {
    "current-context"?: string;
    contexts?: { name: string; context: { user: string } }[];
    users?: { name: string; user: Record<string, unknown> }[];
  };
  const context = config.contexts?.find((c) => c.name === config["current-context"]) ?? config.contexts?.[0];
  const user = config.users?.find((u) => u.name === context?.context.user);
  if (!user) throw new Error("the kubeconfig has no user for its current context");
  const { "client-certificate": _file, "client-key": _keyFile, ...rest } = user.user;
  user.user = {
    ...rest,
    "client-certificate-data": Buffer.from(certPem).toString("base64"),
    "client-key-data": Buffer.from(keyPem).toString("base64"),
  };
  return stringify(config);
}

interface RenewalState {
  /** Events already recorded, by what they are about, so that each says it once. */
  warned: Set<string>;
  failures: number;
  retryAt?: number;
  /** The Secret's kubeconfig (base64) last replaced by a renewal here. */
  replaced?: string;
}

export class PeerCertificateRenewer {
  private readonly controller: Controller;
  private readonly states = new Map<string, RenewalState>();
  private readonly expiry?: Gauge<"certificate">;
  private readonly now: () => number;

  constructor(private readonly options: PeerCertificateRenewerOptions) {
    this.now = options.now ?? Date.now;
    if (options.registry) this.expiry = certificateExpiryGauge(options.registry);
    this.controller = new Controller({
      name: "peer-certificates",
      workers: 2,
      logger: options.logger,
      reconcile: (_key, ctx) => this.reconcile(ctx),
    });
    const key = (name: string) => objectKey(options.client.name, undefined, name);
    this.controller.watch(options.peerings);
    this.controller.watch(options.peerSecrets, (secret) =>
      options.peerings
        .list()
        .filter((p) => p.spec.kubeconfigSecretRef.name === secret.metadata?.name)
        .map((p) => key(p.metadata!.name!)),
    );
  }

  start(): Promise<void> {
    return this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
    this.states.clear();
  }

  private async reconcile(ctx: ReconcileContext): Promise<ReconcileResult> {
    const name = ctx.ref.name;
    const peering = this.options.peerings.get(undefined, name);
    if (!peering || peering.metadata?.deletionTimestamp) {
      this.expiry?.remove({ certificate: peerCertificateLabel(name) });
      this.states.delete(name);
      return reconcileDone();
    }
    const state = this.states.get(name) ?? { warned: new Set<string>(), failures: 0 };
    this.states.set(name, state);
    const secretName = peering.spec.kubeconfigSecretRef.name;
    const secret = this.options.peerSecrets.get(this.options.namespace, secretName);
    const encoded = secret?.data?.[KUBECONFIG_KEY];
    // A missing or broken Secret is the peering controller's to report (Ready=False CredentialsInvalid).
    if (!secret || !encoded) return reconcileDone();
    // The cache has not seen this replica's own write yet: its update brings the next reconcile.
    if (encoded === state.replaced) return reconcileDone();
    const kubeconfig = Buffer.from(encoded, "base64").toString();
    let certificate: X509Certificate;
    try {
      const certData = loadPeerCredentials(kubeconfig).kubeConfig.getCurrentUser()?.certData;
      if (!certData) return reconcileDone();
      certificate = new X509Certificate(Buffer.from(certData, "base64"));
    } catch {
      return reconcileDone();
    }
    const notBefore = new Date(certificate.validFrom);
    const notAfter = new Date(certificate.validTo);
    this.expiry?.set({ certificate: peerCertificateLabel(name) }, notAfter.getTime() / 1000);

    let fraction: number;
    try {
      fraction = renewFractionOf(peering.metadata?.annotations);
    } catch (err) {
      fraction = renewFractionOf(undefined);
      this.warnOnce(
        peering,
        `fraction:${(err as Error).message}`,
        "InvalidAnnotation",
        `${(err as Error).message}; renewing at the default instead`,
      );
    }
    const now = this.now();
    const schedule = renewalSchedule(notBefore, notAfter, new Date(now), fraction);
    if (schedule.state === "expired") {
      this.warnOnce(
        peering,
        `expired:${notAfter.getTime()}`,
        "CertificateExpired",
        `the client certificate for provider "${peering.spec.remoteClusterName}" expired at ${notAfter.toISOString()}: it cannot be renewed with an expired certificate; the peering must be made again (tenantry unpeer, then tenantry peer)`,
      );
      return reconcileDone();
    }
    if (schedule.state === "valid") {
      state.failures = 0;
      state.retryAt = undefined;
      return requeueAfter(Math.min(MAX_WAIT_MS, schedule.renewAt.getTime() - now));
    }
    if (state.retryAt !== undefined && now < state.retryAt) return requeueAfter(state.retryAt - now);

    try {
      const renewed = await this.renew(secret, kubeconfig);
      if (!renewed) return reconcileDone();
      state.replaced = encoded;
      state.failures = 0;
      state.retryAt = undefined;
      state.warned.clear();
      const message = `renewed the client certificate for provider "${peering.spec.remoteClusterName}" as ${renewed.username} through CertificateSigningRequest ${renewed.csr}: valid until ${renewed.notAfter.toISOString()} (the previous one until ${notAfter.toISOString()})`;
      ctx.logger.info(
        { peering: name, csr: renewed.csr, notAfter: renewed.notAfter },
        "peer certificate renewed",
      );
      this.event(peering, "Normal", "CertificateRenewed", message);
      // The Secret's change brings the next reconcile.
      return reconcileDone();
    } catch (err) {
      state.failures++;
      const delay = exponentialDelay(state.failures - 1, FIRST_RETRY_MS, MAX_RETRY_MS);
      state.retryAt = now + delay;
      const reason = describeError(err);
      ctx.logger.warn({ peering: name, error: reason, retryInMs: delay }, "peer certificate renewal failed");
      this.warnOnce(
        peering,
        `failed:${notAfter.getTime()}:${reason}`,
        "CertificateRenewalFailed",
        `could not renew the client certificate for provider "${peering.spec.remoteClusterName}" (valid until ${notAfter.toISOString()}; the current one stays in use): ${reason}; retrying in ${Math.round(delay / 1000)}s`,
      );
      return requeueAfter(delay);
    }
  }

  /**
   * A fresh key, a request for it signed by the provider with the current credentials, and the
   * Secret rewritten only if it still holds the kubeconfig the renewal started from.
   */
  private async renew(
    secret: V1Secret,
    kubeconfig: string,
  ): Promise<{ csr: string; username: string; notAfter: Date } | undefined> {
    const credentials = loadPeerCredentials(kubeconfig);
    const username = credentials.username;
    if (!username) throw new Error("the current client certificate names no user (CN)");
    const expirationSeconds = certificateSecondsOf(secret.metadata?.annotations, PEER_CERTIFICATE_SECONDS);
    const { csrPem, keyPem } = await createCertificateRequest(username);
    const api = credentials.kubeConfig.makeApiClient(CertificatesV1Api);
    const name = `tenantry-peer-renewal-${randomBytes(6).toString("hex")}`;
    const body = clientCertificateRequest({
      name,
      csrPem,
      expirationSeconds,
      labels: { "app.kubernetes.io/managed-by": "tenantry" },
    });
    try {
      await api.createCertificateSigningRequest({ body });
    } catch (err) {
      throw new Error(`creating CertificateSigningRequest ${name} in the provider: ${describeError(err)}`);
    }
    let certPem: string;
    try {
      certPem = await waitForIssuedCertificate(api, name, {
        timeoutMs: this.options.signTimeoutMs ?? 60_000,
      });
    } catch (err) {
      // Only the provider's tenantry approves peers' requests, and its log says why it did not.
      const message = describeError(err);
      throw new Error(
        /not approved/.test(message) ? `${message}: is tenantry running in the provider?` : message,
      );
    }
    const issued = new X509Certificate(certPem);
    if (!issued.checkPrivateKey(createPrivateKey(keyPem))) {
      throw new Error(
        `CertificateSigningRequest ${name}: the issued certificate is not for the key requested`,
      );
    }
    const cn = /(?:^|\n)CN=([^\n]*)/.exec(issued.subject)?.[1];
    if (cn !== username) {
      throw new Error(
        `CertificateSigningRequest ${name}: the issued certificate names "${cn}", not ${username}`,
      );
    }

    const { client, namespace } = this.options;
    const current = await client.core.readNamespacedSecret({ name: secret.metadata!.name!, namespace });
    // Changed meanwhile (the peering made again, an operator): its change brings the next look.
    if (current.data?.[KUBECONFIG_KEY] !== secret.data?.[KUBECONFIG_KEY]) return undefined;
    try {
      await client.core.replaceNamespacedSecret({
        name: current.metadata!.name!,
        namespace,
        body: {
          ...current,
          data: {
            ...current.data,
            [KUBECONFIG_KEY]: Buffer.from(withClientCertificate(kubeconfig, certPem, keyPem)).toString(
              "base64",
            ),
          },
        },
      });
    } catch (err) {
      if (isConflict(err)) return undefined;
      throw err;
    }
    return { csr: name, username, notAfter: new Date(issued.validTo) };
  }

  private warnOnce(peering: Peering, key: string, reason: string, message: string): void {
    const state = this.states.get(peering.metadata!.name!);
    if (state?.warned.has(key)) return;
    state?.warned.add(key);
    this.options.logger.warn({ peering: peering.metadata!.name, reason }, message);
    this.event(peering, "Warning", reason, message);
  }

  private event(peering: Peering, type: "Normal" | "Warning", reason: string, message: string): void {
    void recordCertificateEvent(
      this.options.client.core,
      {
        apiVersion: TENANTS_API_VERSION,
        kind: "Peering",
        name: peering.metadata!.name!,
        ...(peering.metadata?.uid ? { uid: peering.metadata.uid } : {}),
      },
      { type, reason, message, component: "tenantry.dev/peering" },
      this.options.logger,
    );
  }
}
