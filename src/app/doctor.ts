/**
 * `tenantry doctor`: checks an installation from outside, as its administrator would, and says for
 * each problem what is wrong and how to fix it. Read-only, apart from one TokenReview and one
 * SubjectAccessReview that show whether kube-apiserver asks tenantry about tokens and permissions,
 * one dry-run Namespace that shows whether kube-apiserver reaches the admission webhooks with its
 * client certificate, and one empty POST to a webhook without a certificate (refused, or a 400).
 */
import { randomBytes } from "node:crypto";
import { request as httpsRequest } from "node:https";
import type { TLSSocket } from "node:tls";
import {
  AdmissionregistrationV1Api,
  ApiextensionsV1Api,
  AuthenticationV1Api,
  AuthorizationV1Api,
  CustomObjectsApi,
  DiscoveryV1Api,
  type V1CustomResourceDefinition,
  type AdmissionregistrationV1WebhookClientConfig as WebhookClientConfig,
} from "@kubernetes/client-node";
import type { CustomResourceDefinition } from "../apis/index.js";
import { UNRECOGNIZED_TOKEN_REASON } from "../identity/index.js";
import { type ClusterClient, describeError, isNotFound } from "../kube/index.js";
import { certificateValidity, isIssuedBy } from "../pki/index.js";
import {
  DEFAULT_RENEW_BEFORE_DAYS,
  privilegedConfigurationName,
  SHARED_ENTRIES,
  WEBHOOK_CONFIGURATION,
  WEBHOOK_TLS_SECRET,
} from "../webhooks/index.js";
import { controllersLease } from "./leases.js";
import { LEADING_CAPABILITIES } from "./options.js";

export type CheckStatus = "ok" | "warning" | "error";

export interface Finding {
  /** What was checked, e.g. `crds`, `webhooks/ca`, `leader`. */
  check: string;
  status: CheckStatus;
  detail: string;
  /** What to do about it (problems only). */
  fix?: string;
}

export interface DoctorOptions {
  client: ClusterClient;
  /** tenantry's namespace. */
  namespace: string;
  /** The CustomResourceDefinitions this version of tenantry serves. */
  crds: readonly CustomResourceDefinition[];
  /** The Leases whose holders run the controllers, one per capability (`leaderLeases()`). */
  leaderLeases: readonly LeaderLease[];
  /** A certificate with fewer days than this left is a warning (tenantry renews it before). */
  renewBeforeDays?: number;
  /** Timeout of each probe (webhook server, Service proxy). Default 5 s. */
  timeoutMs?: number;
  now?: () => Date;
}

const DAY_MS = 24 * 3600_000;
const RESTART_FIX = (namespace: string) =>
  `restart tenantry (\`kubectl -n ${namespace} rollout restart deployment/tenantry\`, or start \`tenantry run\` again): each replica registers its webhooks with its CA at start`;

/** Every check, in order; none throws (a check that cannot run is an error finding naming why). */
export async function diagnose(options: DoctorOptions): Promise<Finding[]> {
  const checks = [
    checkCrds,
    checkWebhooks,
    checkCertificates,
    checkPeerCertificates,
    checkLeader,
    checkReplicas,
    checkTokenWebhook,
    checkAuthorizationWebhook,
    checkAdmissionClientCertificate,
    checkNodeRestriction,
  ];
  const findings: Finding[] = [];
  for (const check of checks) {
    try {
      findings.push(...(await check(options)));
    } catch (err) {
      findings.push({
        check: check.name.replace(/^check/, "").toLowerCase(),
        status: "error",
        detail: `could not check: ${describeError(err)}`,
        fix: "make sure the kubeconfig reaches the cluster as an administrator",
      });
    }
  }
  return findings;
}

/** Every CRD tenantry serves exists, is established, and serves (and stores) the versions this tenantry uses. */
async function checkCrds(options: DoctorOptions): Promise<Finding[]> {
  const api = options.client.kubeConfig.makeApiClient(ApiextensionsV1Api);
  const installed = new Map<string, V1CustomResourceDefinition>();
  for (const crd of (await api.listCustomResourceDefinition()).items) installed.set(crd.metadata!.name!, crd);
  const fix =
    "apply this version's CRDs: `kubectl apply --server-side -f deploy/crds/` (or `helm upgrade`; tenantry also installs them at start)";
  const findings: Finding[] = [];
  for (const wanted of options.crds) {
    const name = wanted.metadata.name;
    const found = installed.get(name);
    if (!found) {
      findings.push({
        check: "crds",
        status: "error",
        detail: `CustomResourceDefinition ${name} is missing`,
        fix,
      });
      continue;
    }
    const served = new Set(found.spec.versions.filter((v) => v.served).map((v) => v.name));
    const missing = wanted.spec.versions.filter((v) => v.served && !served.has(v.name)).map((v) => v.name);
    if (missing.length) {
      findings.push({
        check: "crds",
        status: "error",
        detail: `CustomResourceDefinition ${name} does not serve ${missing.join(", ")} (serves ${[...served].join(", ") || "nothing"})`,
        fix,
      });
    }
    const established = found.status?.conditions?.find((c) => c.type === "Established");
    if (established?.status !== "True") {
      findings.push({
        check: "crds",
        status: "error",
        detail: `CustomResourceDefinition ${name} is not established${established?.message ? `: ${established.message}` : ""}`,
        fix: `see \`kubectl get crd ${name} -o yaml\` (status.conditions)`,
      });
    }
  }
  if (!findings.length) {
    const versions = [...new Set(options.crds.flatMap((c) => c.spec.versions.map((v) => v.name)))].join(", ");
    findings.push({
      check: "crds",
      status: "ok",
      detail: `${options.crds.length} CustomResourceDefinitions established, serving ${versions}`,
    });
  }
  return findings;
}

interface RegisteredWebhook {
  configuration: string;
  kind: "Mutating" | "Validating";
  name: string;
  clientConfig: WebhookClientConfig;
}

async function registeredWebhooks(client: ClusterClient): Promise<{
  webhooks: RegisteredWebhook[];
  missing: string[];
}> {
  const api = client.kubeConfig.makeApiClient(AdmissionregistrationV1Api);
  const webhooks: RegisteredWebhook[] = [];
  const missing: string[] = [];
  for (const name of [WEBHOOK_CONFIGURATION, privilegedConfigurationName(WEBHOOK_CONFIGURATION)]) {
    for (const kind of ["Mutating", "Validating"] as const) {
      try {
        const configuration =
          kind === "Mutating"
            ? await api.readMutatingWebhookConfiguration({ name })
            : await api.readValidatingWebhookConfiguration({ name });
        for (const webhook of configuration.webhooks ?? []) {
          webhooks.push({
            configuration: name,
            kind,
            name: webhook.name,
            clientConfig: webhook.clientConfig,
          });
        }
      } catch (err) {
        if (!isNotFound(err)) throw err;
        // The privileged copies exist only when some webhook fails closed; the main ones always.
        if (name === WEBHOOK_CONFIGURATION) missing.push(`${kind}WebhookConfiguration ${name}`);
      }
    }
  }
  return { webhooks, missing };
}

async function readTlsSecret(
  options: DoctorOptions,
): Promise<{ caPem?: string; certPem?: string } | undefined> {
  try {
    const secret = await options.client.core.readNamespacedSecret({
      name: WEBHOOK_TLS_SECRET,
      namespace: options.namespace,
    });
    const text = (key: string) =>
      secret.data?.[key] ? Buffer.from(secret.data[key], "base64").toString() : undefined;
    return { caPem: text("ca.crt"), certPem: text("tls.crt") };
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/**
 * How many entries, and which: the dispatcher's shared entries (one call each way for everything
 * in tenant namespaces and for cluster-scoped objects) and the narrow ones that keep their own.
 */
function registrationDetail(webhooks: RegisteredWebhook[]): string {
  const sharedNames = new Set<string>(Object.values(SHARED_ENTRIES).map((e) => e.name));
  const names = (kind: RegisteredWebhook["kind"], shared: boolean) =>
    [
      ...new Set(
        webhooks.filter((w) => w.kind === kind && sharedNames.has(w.name) === shared).map((w) => w.name),
      ),
    ]
      .sort()
      .join(", ") || "none";
  const configurations = new Set(webhooks.map((w) => `${w.kind}WebhookConfiguration ${w.configuration}`));
  return [
    `${webhooks.length} entries in ${configurations.size} configurations`,
    `shared (one call each way per request): mutating ${names("Mutating", true)}; validating ${names("Validating", true)}`,
    `own (narrow): mutating ${names("Mutating", false)}; validating ${names("Validating", false)}`,
  ].join("; ");
}

/**
 * The webhook configurations exist, carry the CA that signed the serving certificate, and the
 * server behind them answers over TLS verified with that CA.
 */
async function checkWebhooks(options: DoctorOptions): Promise<Finding[]> {
  const { namespace } = options;
  const findings: Finding[] = [];
  const { webhooks, missing } = await registeredWebhooks(options.client);
  for (const what of missing) {
    findings.push({
      check: "webhooks/registration",
      status: "error",
      detail: `${what} is missing: tenant isolation and quota are not enforced at admission`,
      fix: `run tenantry with its webhooks component; ${RESTART_FIX(namespace)}`,
    });
  }
  if (!webhooks.length) return findings;
  findings.push({
    check: "webhooks/registration",
    status: missing.length ? "warning" : "ok",
    detail: registrationDetail(webhooks),
  });

  const secret = await readTlsSecret(options);
  const wrongCa: string[] = [];
  for (const webhook of webhooks) {
    const caPem = Buffer.from(webhook.clientConfig.caBundle ?? "", "base64").toString();
    const signs = secret?.certPem ? await isIssuedBy(secret.certPem, caPem) : caPem === secret?.caPem;
    if (!signs)
      wrongCa.push(`${webhook.name} (${webhook.kind}WebhookConfiguration ${webhook.configuration})`);
  }
  if (wrongCa.length) {
    findings.push({
      check: "webhooks/ca",
      status: "error",
      detail: `the caBundle of ${wrongCa.join(", ")} did not sign the serving certificate in Secret ${namespace}/${WEBHOOK_TLS_SECRET}: kube-apiserver refuses the webhook server's TLS`,
      fix: RESTART_FIX(namespace),
    });
  } else if (secret?.certPem) {
    findings.push({
      check: "webhooks/ca",
      status: "ok",
      detail: `every caBundle signed the serving certificate in Secret ${namespace}/${WEBHOOK_TLS_SECRET}`,
    });
  }

  // One probe per distinct endpoint and CA, with the CA the configuration gives kube-apiserver.
  const endpoints = new Map<string, RegisteredWebhook>();
  for (const webhook of webhooks) {
    const { url, service, caBundle } = webhook.clientConfig;
    const where = url
      ? new URL(url).origin
      : `service ${service?.namespace}/${service?.name}:${service?.port ?? 443}`;
    endpoints.set(`${where} ${caBundle}`, webhook);
  }
  for (const webhook of endpoints.values()) {
    const reachable = await probeWebhookServer(options, webhook);
    findings.push(reachable);
    if (reachable.status === "ok") findings.push(await probeAnonymousCaller(options, webhook));
  }
  return findings;
}

const CLIENT_CA_FIX =
  "give tenantry the CA that signed kube-apiserver's webhook client certificate: `tenantry run --webhook-client-ca FILE` (chart: apiServerClient.caBundle); see README, kube-apiserver's webhook client certificate";

/**
 * A webhook server answers only kube-apiserver's client certificate: an empty body POSTed without
 * one must get 401 (a server that answers anyone says 400, not an AdmissionReview, and changes nothing).
 */
async function probeAnonymousCaller(options: DoctorOptions, webhook: RegisteredWebhook): Promise<Finding> {
  const { url, service, caBundle } = webhook.clientConfig;
  const check = "webhooks/callers";
  const where = url
    ? new URL(url).origin
    : `Service ${service?.namespace}/${service?.name}:${service?.port ?? 443}`;
  let answer: { status: number; text: string };
  try {
    answer = url
      ? await postWithCa(url, Buffer.from(caBundle ?? "", "base64").toString(), options.timeoutMs ?? 5_000)
      : // kube-apiserver's Service proxy presents no client certificate: a caller like any other.
        await options.client.objects.postText(
          `/api/v1/namespaces/${service?.namespace}/services/https:${service?.name}:${service?.port ?? 443}/proxy${service?.path ?? "/"}`,
          "{}",
        );
  } catch (err) {
    return {
      check,
      status: "warning",
      detail: `${where}: could not send an admission review without a client certificate (${describeError(err)})`,
      fix: "run `tenantry doctor` again; see tenantry's logs",
    };
  }
  if (answer.status === 401 && answer.text.includes("client certificate")) {
    return {
      check,
      status: "ok",
      detail: `${where} refuses admission reviews from callers without kube-apiserver's client certificate (401)`,
    };
  }
  return {
    check,
    // Through the Service proxy the probe came from kube-apiserver's side of a NetworkPolicy.
    status: url ? "error" : "warning",
    detail: `${where} answered an admission review sent without a client certificate (HTTP ${answer.status}): anyone who reaches it can forge AdmissionReviews (reserve another tenant's quota, create bootstrap tokens)${url ? "" : "; only a NetworkPolicy keeps callers other than kube-apiserver out"}`,
    fix: CLIENT_CA_FIX,
  };
}

async function probeWebhookServer(options: DoctorOptions, webhook: RegisteredWebhook): Promise<Finding> {
  const { url, service, caBundle } = webhook.clientConfig;
  const caPem = Buffer.from(caBundle ?? "", "base64").toString();
  if (url) {
    const healthz = `${new URL(url).origin}/healthz`;
    try {
      const served = await getWithCa(healthz, caPem, options.timeoutMs ?? 5_000);
      return {
        check: "webhooks/reachable",
        status: "ok",
        detail: `${healthz} answers over TLS verified with the registered CA (serving certificate valid until ${served.validTo.toISOString()})`,
      };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? "";
      const tls = /CERT|SIGNATURE|SELF_SIGNED|ALTNAME|UNABLE_TO/.test(code);
      return {
        check: "webhooks/reachable",
        status: "error",
        detail: `${healthz}: ${describeError(err)}${tls ? " (the registered CA does not verify the certificate served there)" : ""}`,
        fix: tls
          ? RESTART_FIX(options.namespace)
          : `is tenantry running and listening there? See its logs; ${RESTART_FIX(options.namespace)}`,
      };
    }
  }
  const name = service?.name ?? "";
  const namespace = service?.namespace ?? options.namespace;
  const port = service?.port ?? 443;
  const slices = await options.client.kubeConfig.makeApiClient(DiscoveryV1Api).listNamespacedEndpointSlice({
    namespace,
    labelSelector: `kubernetes.io/service-name=${name}`,
  });
  const ready = slices.items.flatMap((s) => s.endpoints ?? []).filter((e) => e.conditions?.ready !== false);
  if (!ready.length) {
    return {
      check: "webhooks/reachable",
      status: "error",
      detail: `Service ${namespace}/${name} has no ready endpoint: no tenantry pod answers admission requests`,
      fix: `\`kubectl -n ${namespace} get pods\` and their logs: are the pods ready (/readyz)?`,
    };
  }
  try {
    await options.client.objects.getText(
      `/api/v1/namespaces/${namespace}/services/https:${name}:${port}/proxy/healthz`,
    );
    return {
      check: "webhooks/reachable",
      status: "ok",
      detail: `Service ${namespace}/${name}:${port} answers through kube-apiserver (${ready.length} ready endpoints)`,
    };
  } catch (err) {
    return {
      check: "webhooks/reachable",
      status: "error",
      detail: `Service ${namespace}/${name}:${port} does not answer through kube-apiserver: ${describeError(err)}`,
      fix: "check the Service's targetPort against tenantry's --webhook-port, and NetworkPolicies in the way",
    };
  }
}

/** POST `{}` over TLS trusting only `caPem`, with no client certificate; resolves with the answer. */
function postWithCa(
  url: string,
  caPem: string,
  timeoutMs: number,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      url,
      {
        method: "POST",
        ca: caPem,
        agent: false,
        timeout: timeoutMs,
        headers: { "content-type": "application/json" },
      },
      (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => {
          text += chunk.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end("{}");
  });
}

/** GET over TLS trusting only `caPem`; resolves with the served certificate's expiry. */
function getWithCa(url: string, caPem: string, timeoutMs: number): Promise<{ validTo: Date }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { ca: caPem, agent: false, timeout: timeoutMs }, (res) => {
      const certificate = (res.socket as TLSSocket).getPeerCertificate();
      res.resume();
      res.on("end", () => {
        if (res.statusCode !== 200) reject(new Error(`HTTP ${res.statusCode}`));
        else resolve({ validTo: new Date(certificate.valid_to) });
      });
    });
    req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end();
  });
}

/** The webhook certificate and its CA are valid for longer than the renewal window. */
async function checkCertificates(options: DoctorOptions): Promise<Finding[]> {
  const { namespace } = options;
  const secret = await readTlsSecret(options);
  if (!secret?.certPem || !secret.caPem) {
    return [
      {
        check: "certificates",
        status: "error",
        detail: `Secret ${namespace}/${WEBHOOK_TLS_SECRET} ${secret ? "lacks ca.crt or tls.crt" : "is missing"}`,
        fix: `${RESTART_FIX(namespace)} (it issues the certificate); with cert-manager, see \`kubectl -n ${namespace} describe certificate\``,
      },
    ];
  }
  const now = (options.now ?? (() => new Date()))().getTime();
  const renewBeforeDays = options.renewBeforeDays ?? DEFAULT_RENEW_BEFORE_DAYS;
  return [
    ["webhook serving certificate", secret.certPem],
    ["webhook CA", secret.caPem],
  ].map(([what, pem]) => {
    const { notAfter } = certificateValidity(pem!);
    const days = (notAfter.getTime() - now) / DAY_MS;
    const until = `valid until ${notAfter.toISOString()}`;
    if (days <= 0) {
      return {
        check: "certificates",
        status: "error" as const,
        detail: `the ${what} in Secret ${namespace}/${WEBHOOK_TLS_SECRET} expired (${notAfter.toISOString()}): kube-apiserver cannot call the webhooks`,
        fix: `delete the Secret (\`kubectl -n ${namespace} delete secret ${WEBHOOK_TLS_SECRET}\`), then ${RESTART_FIX(namespace)}`,
      };
    }
    if (days < renewBeforeDays) {
      return {
        check: "certificates",
        status: "warning" as const,
        detail: `the ${what} expires in ${formatDays(days)} (${until}) and has not been renewed: tenantry renews ${renewBeforeDays} days before expiry`,
        fix: `check tenantry's logs and Events (\`kubectl -n ${namespace} get events --field-selector involvedObject.name=${WEBHOOK_TLS_SECRET}\`): can it write the Secret? With cert-manager, \`kubectl -n ${namespace} describe certificate\``,
      };
    }
    return {
      check: "certificates",
      status: "ok" as const,
      detail: `the ${what} is ${until} (${formatDays(days)})`,
    };
  });
}

/**
 * Each Peering's client certificate for its provider is valid longer than the renewal window: an
 * expired one makes the virtual node NotReady and stops offloading there.
 */
async function checkPeerCertificates(options: DoctorOptions): Promise<Finding[]> {
  const api = options.client.kubeConfig.makeApiClient(CustomObjectsApi);
  const list = (await api.listClusterCustomObject({
    group: "tenantry.dev",
    version: "v1alpha1",
    plural: "peerings",
  })) as { items: { metadata: { name: string }; status?: { credentialsExpireAt?: string } }[] };
  const now = (options.now ?? (() => new Date()))().getTime();
  // Peer certificates live 30 days and are renewed 10 days before expiry: a week before, renewal has failed.
  const renewBeforeDays = 7;
  const findings: Finding[] = [];
  for (const peering of list.items) {
    const at = peering.status?.credentialsExpireAt;
    if (!at) continue;
    const days = (Date.parse(at) - now) / DAY_MS;
    if (days >= renewBeforeDays) continue;
    findings.push({
      check: "certificates/peers",
      status: days <= 0 ? "error" : "warning",
      detail:
        days <= 0
          ? `the client certificate of Peering ${peering.metadata.name} expired at ${at}: its virtual node is NotReady`
          : `the client certificate of Peering ${peering.metadata.name} expires in ${formatDays(days)} (${at})`,
      fix:
        days <= 0
          ? `an expired certificate cannot be renewed: unpeer and peer again (\`tenantry unpeer\`, then \`tenantry peer --provider ${peering.metadata.name}\` with the same options); what is offloaded there is recreated`
          : `tenantry renews it when a third of its lifetime is left and has not: see \`kubectl describe peering ${peering.metadata.name}\` (CertificateRenewalFailed) and the provider's tenantry log`,
    });
  }
  if (!findings.length && list.items.length) {
    findings.push({
      check: "certificates/peers",
      status: "ok",
      detail: `${list.items.length} peerings' certificates valid for more than ${renewBeforeDays} days`,
    });
  }
  return findings;
}

function formatDays(days: number): string {
  if (days >= 2) return `${Math.floor(days)} days`;
  const hours = days * 24;
  return hours >= 2 ? `${Math.floor(hours)} hours` : `${Math.max(1, Math.floor(hours * 60))} minutes`;
}

/** For each capability, a replica holds its controllers' Lease and renews it. */
async function checkLeader(options: DoctorOptions): Promise<Finding[]> {
  const findings = await Promise.all(options.leaderLeases.map((lease) => checkLease(options, lease)));
  return findings.flat();
}

async function checkLease(options: DoctorOptions, leaderLease: LeaderLease): Promise<Finding[]> {
  const { namespace } = options;
  const { name } = leaderLease;
  const check = "leader";
  const fix = `\`kubectl -n ${namespace} get pods\` and the logs of tenantry's replicas: one running its capability (--components) must be running`;
  let lease: Awaited<ReturnType<typeof options.client.coordination.readNamespacedLease>>;
  try {
    lease = await options.client.coordination.readNamespacedLease({ name, namespace });
  } catch (err) {
    if (!isNotFound(err)) throw err;
    if (leaderLease.missing === "ok")
      return [
        { check, status: "ok", detail: `no Lease ${namespace}/${name}: nothing to lead (not configured)` },
      ];
    if (leaderLease.missing === "warning")
      return [
        {
          check,
          status: "warning",
          detail: `no Lease ${namespace}/${name}: no replica has led it (switched off, or no replica's --components names it)`,
          fix,
        },
      ];
    return [
      {
        check,
        status: "error",
        detail: `no Lease ${namespace}/${name}: no replica has ever led, its controllers are not running`,
        fix,
      },
    ];
  }
  const holder = lease.spec?.holderIdentity;
  const renewed = lease.spec?.renewTime ? new Date(lease.spec.renewTime).getTime() : 0;
  const duration = (lease.spec?.leaseDurationSeconds ?? 15) * 1000;
  const ago = Math.round(((options.now ?? (() => new Date()))().getTime() - renewed) / 1000);
  if (!holder)
    return [
      { check, status: "error", detail: `Lease ${namespace}/${name} is released: no replica leads`, fix },
    ];
  if (ago * 1000 > duration) {
    return [
      {
        check,
        status: "error",
        detail: `${holder} holds Lease ${namespace}/${name} but last renewed it ${ago} s ago (it lasts ${duration / 1000} s): its controllers are not running`,
        fix,
      },
    ];
  }
  return [{ check, status: "ok", detail: `${holder} leads (Lease renewed ${Math.max(0, ago)} s ago)` }];
}

/**
 * A capability's Lease as the doctor checks it: a missing one is an error, unless the capability may
 * have nothing to lead (`ok`: backups without a store) or be switched off (`warning`).
 */
export interface LeaderLease {
  name: string;
  missing?: "ok" | "warning";
}

/** The Lease of every capability with leader-only controllers, as `tenantry doctor` checks them. */
export function leaderLeases(): LeaderLease[] {
  const missing: Partial<Record<string, LeaderLease["missing"]>> = {
    backup: "ok",
    monitor: "warning",
    storage: "warning",
  };
  return LEADING_CAPABILITIES.map((capability) => ({
    name: controllersLease(capability),
    ...(missing[capability] ? { missing: missing[capability] } : {}),
  }));
}

/** In a cluster installed with the chart: every replica of the Deployment is ready. */
async function checkReplicas(options: DoctorOptions): Promise<Finding[]> {
  const { namespace } = options;
  const deployments = await options.client.apps.listNamespacedDeployment({
    namespace,
    labelSelector: "app.kubernetes.io/name=tenantry",
  });
  return deployments.items.map((deployment) => {
    const name = deployment.metadata!.name!;
    const wanted = deployment.spec?.replicas ?? 1;
    const ready = deployment.status?.readyReplicas ?? 0;
    const detail = `Deployment ${namespace}/${name}: ${ready} of ${wanted} replicas ready`;
    if (ready >= wanted) return { check: "replicas", status: "ok" as const, detail };
    return {
      check: "replicas",
      status: ready === 0 ? ("error" as const) : ("warning" as const),
      detail: ready === 0 ? `${detail}: nobody answers admission requests` : detail,
      fix: `\`kubectl -n ${namespace} describe deployment ${name}\` and the logs of its pods (\`kubectl -n ${namespace} logs deployment/${name}\`)`,
    };
  });
}

/**
 * kube-apiserver asks tenantry about tokens: a token of no identity provider comes back with
 * tenantry's own reason only if the API server sent it there.
 */
async function checkTokenWebhook(options: DoctorOptions): Promise<Finding[]> {
  const api = options.client.kubeConfig.makeApiClient(AuthenticationV1Api);
  // Neither a JWT nor a Keystone token: no identity provider of tenantry's claims it.
  const token = `tenantry-doctor-probe-${randomBytes(16).toString("hex")}`;
  const review = await api.createTokenReview({ body: { spec: { token } } });
  const error = review.status?.error ?? "";
  const check = "apiserver/authentication";
  if (error.includes(UNRECOGNIZED_TOKEN_REASON)) {
    return [
      { check, status: "ok", detail: "kube-apiserver asks tenantry about tokens (TokenReview webhook)" },
    ];
  }
  const webhookFailed = /webhook|rejected our request|connection refused|dial tcp|i\/o timeout/i.test(error);
  return [
    {
      check,
      status: "warning",
      detail: webhookFailed
        ? `kube-apiserver's token webhook fails: ${error}`
        : "kube-apiserver does not ask tenantry about tokens: tokens from `tenantry login` are refused by kubectl",
      fix: webhookFailed
        ? "is the identity API reachable from kube-apiserver (the URL and CA in its webhook kubeconfig)?"
        : "start kube-apiserver with --authentication-token-webhook-config-file=<kubeconfig whose server is tenantry's identity API /authenticate> --authentication-token-webhook-version=v1",
    },
  ];
}

/**
 * kube-apiserver asks an authorization webhook: its evaluations are counted in its metrics
 * (`apiserver_authorization_webhook_evaluations_total`), here read around one probe review.
 */
async function checkAuthorizationWebhook(options: DoctorOptions): Promise<Finding[]> {
  const check = "apiserver/authorization";
  const before = webhookEvaluations(await options.client.objects.getText("/metrics"));
  const api = options.client.kubeConfig.makeApiClient(AuthorizationV1Api);
  await api.createSubjectAccessReview({
    body: {
      spec: {
        user: `tenantry-doctor-${randomBytes(6).toString("hex")}`,
        resourceAttributes: { namespace: "default", verb: "get", resource: "pods" },
      },
    },
  });
  const after = webhookEvaluations(await options.client.objects.getText("/metrics"));
  const fix =
    "give kube-apiserver an --authorization-config with a Webhook authorizer (tenantry's identity API /authorize) after Node and before RBAC; see README, Identity and access";
  if (!after.size) {
    return [
      {
        check,
        status: "warning",
        detail:
          "kube-apiserver has no authorization webhook: AccessGrants and members' own-objects rule are not enforced",
        fix,
      },
    ];
  }
  const grew = [...after].filter(([key, n]) => n > (before.get(key) ?? 0)).map(([key]) => key);
  const failing = grew.filter((key) => !key.endsWith("result=success"));
  if (failing.length) {
    return [
      {
        check,
        status: "error",
        detail: `kube-apiserver's authorization webhook calls fail (${failing.join(", ")}): tenant users are denied`,
        fix: "is the identity API reachable from kube-apiserver (the URL and CA in its webhook kubeconfig)? See tenantry's logs",
      },
    ];
  }
  return [
    {
      check,
      status: "ok",
      detail: `kube-apiserver asks an authorization webhook (${[...new Set([...after.keys()].map((k) => k.split(" ")[0]))].join(", ")})`,
    },
  ];
}

/**
 * kube-apiserver presents a client certificate tenantry trusts when it calls the admission
 * webhooks: around one dry-run Namespace (which tenantry's namespace webhooks see, and which
 * creates nothing), `apiserver_admission_webhook_request_total` of tenantry's webhooks counts the
 * HTTP codes of those calls — 401 is the webhook server refusing kube-apiserver.
 */
async function checkAdmissionClientCertificate(options: DoctorOptions): Promise<Finding[]> {
  const check = "apiserver/admission";
  const { webhooks } = await registeredWebhooks(options.client);
  const names = new Set(webhooks.map((w) => w.name));
  if (!names.size) return [];
  const calls = async () => admissionWebhookCalls(await options.client.objects.getText("/metrics"), names);
  const before = await calls();
  await options.client.core.createNamespace({
    body: { metadata: { name: `tenantry-doctor-${randomBytes(6).toString("hex")}` } },
    dryRun: "All",
  });
  const after = await calls();
  const grew = (code: string) => (after.get(code) ?? 0) - (before.get(code) ?? 0);
  if (grew("401") > 0) {
    return [
      {
        check,
        status: "error",
        detail: `tenantry's webhook server refused kube-apiserver's admission calls with 401 (${grew("401")} of them): kube-apiserver presents no client certificate, or one from a CA tenantry does not trust; tenant users' requests fail`,
        fix: "give kube-apiserver an --admission-control-config-file whose WebhookAdmissionConfiguration kubeconfig names the webhook host (or `*`) with its client certificate and key, and tenantry the CA that signed it (--webhook-client-ca, chart: apiServerClient.caBundle); see README, kube-apiserver's webhook client certificate",
      },
    ];
  }
  if (grew("200") > 0) {
    return [
      {
        check,
        status: "ok",
        detail: "kube-apiserver calls the admission webhooks with a client certificate tenantry trusts",
      },
    ];
  }
  return [
    {
      check,
      status: "warning",
      detail: `a dry-run Namespace reached none of tenantry's admission webhooks (their calls, by code: ${[...after].map(([code, n]) => `${code}=${n}`).join(", ") || "none"})`,
      fix: "see the webhook configurations (`kubectl get validatingwebhookconfiguration tenantry -o yaml`) and tenantry's logs",
    },
  ];
}

/**
 * kube-apiserver runs the NodeRestriction admission plugin (it shows in its admission metrics):
 * without it a worker node's owner, root on the machine, could relabel and untaint its Node.
 */
async function checkNodeRestriction(options: DoctorOptions): Promise<Finding[]> {
  const metrics = await options.client.objects.getText("/metrics");
  const check = "apiserver/node-restriction";
  if (
    /^apiserver_admission_controller_admission_duration_seconds_count\{[^}]*name="NodeRestriction"/m.test(
      metrics,
    )
  ) {
    return [{ check, status: "ok", detail: "kube-apiserver runs the NodeRestriction admission plugin" }];
  }
  return [
    {
      check,
      status: "warning",
      detail:
        "kube-apiserver does not run the NodeRestriction admission plugin: a worker node's owner (root on the machine) can change its Node's taints and node-restriction.kubernetes.io/ labels, and act on other nodes' objects",
      fix: "start kube-apiserver with --enable-admission-plugins=NodeRestriction (and --authorization-mode including Node)",
    },
  ];
}

/** HTTP code → calls of the named webhooks, from `apiserver_admission_webhook_request_total` in kube-apiserver's metrics. */
export function admissionWebhookCalls(metrics: string, names: Set<string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of metrics.split("\n")) {
    if (!line.startsWith("apiserver_admission_webhook_request_total{")) continue;
    if (!names.has(/name="([^"]*)"/.exec(line)?.[1] ?? "")) continue;
    const code = /code="([^"]*)"/.exec(line)?.[1] ?? "";
    counts.set(code, (counts.get(code) ?? 0) + Number(line.slice(line.lastIndexOf(" ") + 1)));
  }
  return counts;
}

/** `name=<authorizer> result=<result>` → count, from kube-apiserver's Prometheus text. */
export function webhookEvaluations(metrics: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of metrics.split("\n")) {
    if (!line.startsWith("apiserver_authorization_webhook_evaluations_total{")) continue;
    const name = /name="([^"]*)"/.exec(line)?.[1] ?? "";
    const result = /result="([^"]*)"/.exec(line)?.[1] ?? "";
    counts.set(`name=${name} result=${result}`, Number(line.slice(line.lastIndexOf(" ") + 1)));
  }
  return counts;
}
