/**
 * Who calls the Admin API (Vasilenko & Kurapati §3.2): users with tokens of tenantry's identity providers
 * (or any token the cluster accepts), the agent inside a runtime pod with its pod's projected
 * service-account token, and admins acting for a user (authority delegation) with an explicit
 * permission.
 */
import { createHash } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import {
  AuthenticationV1Api,
  AuthorizationV1Api,
  type V1ClusterRole,
  type V1Pod,
} from "@kubernetes/client-node";
import { LRUCache } from "lru-cache";
import {
  type Authenticator,
  type Identity,
  kubernetesUserOf,
  TENANT_EXTRA_KEY,
} from "../../identity/index.js";
import { type ClusterClient, describeError, isNotFound } from "../../kube/index.js";
import type { RuntimesCluster } from "../clusters.js";
import { RUNTIME_LABEL } from "../plugins/spi.js";

/** Audience a runtime pod's projected service-account token must be issued for. */
export const RUNTIMES_AUDIENCE = "tenantry-runtimes";
/** Header naming the user an admin acts for (authority delegation). */
export const ON_BEHALF_OF_HEADER = "tenantry-on-behalf-of";
/** The permission delegation needs: verb `delegate` on `runtimes.tenantry.dev`. */
export const DELEGATE_PERMISSION = { group: "tenantry.dev", resource: "runtimes", verb: "delegate" } as const;
export const RUNTIMES_DELEGATE_CLUSTER_ROLE = "tenantry:runtimes-delegate";

/** Bind it (cluster-wide, or in a runtimes namespace) to let someone act on other users' runtimes. */
export const runtimesDelegateClusterRole: V1ClusterRole = {
  apiVersion: "rbac.authorization.k8s.io/v1",
  kind: "ClusterRole",
  metadata: { name: RUNTIMES_DELEGATE_CLUSTER_ROLE },
  rules: [
    {
      apiGroups: [DELEGATE_PERMISSION.group],
      resources: [DELEGATE_PERMISSION.resource],
      verbs: [DELEGATE_PERMISSION.verb],
    },
  ],
};

export interface UserCaller {
  kind: "user";
  username: string;
  uid?: string;
  groups: string[];
  extra: Record<string, string[]>;
  /** The tenant the identity provider puts them in. */
  tenant?: string;
}

/** The agent inside a runtime pod: it may only stop its own runtime. */
export interface AgentCaller {
  kind: "agent";
  username: string;
  namespace: string;
  /** Name of its Runtime (the pod's `tenantry.dev/runtime` label). */
  runtime: string;
  pod: string;
  /** The runtimes cluster its pod runs in; absent: the cluster the Admin API serves from. */
  cluster?: string;
}

export type Caller = UserCaller | AgentCaller;
export type Refusal = { ok: false; status: 401 | 503; detail: string };
export type CallerResult = { ok: true; caller: Caller } | Refusal;

/** A pod that presented its projected service-account token for an audience, as its cluster saw it. */
export interface PodCaller {
  username: string;
  namespace: string;
  /** The pod as read when its token was reviewed (up to the review cache's age). */
  pod: V1Pod;
  /** The runtimes cluster it runs in; absent: the cluster the Admin API serves from. */
  cluster?: string;
}
export type PodResult = { ok: true; pod: PodCaller } | Refusal;

const BEARER = /^Bearer\s+(\S+)\s*$/i;
const POD_NAME_EXTRA = "authentication.kubernetes.io/pod-name";
const POD_UID_EXTRA = "authentication.kubernetes.io/pod-uid";
const CACHE_TTL_MS = 10_000;
const CACHE_SIZE = 10_000;

export function bearerOf(headers: IncomingHttpHeaders): string | undefined {
  return BEARER.exec(headers.authorization ?? "")?.[1];
}

export interface AdminCallersOptions {
  client: ClusterClient;
  authenticator?: Authenticator;
  audience?: string;
  /** Called for each token a tenantry identity provider vouched for (first-login provisioning). */
  onAuthenticated?: (identity: Identity) => Promise<void>;
  /** The other clusters runtimes run in (RuntimeService `spec.cluster`): their pods' agents are reviewed there. */
  runtimesClusters?: () => Promise<RuntimesCluster[]>;
}

export class AdminCallers {
  private readonly reviews = new LRUCache<string, CallerResult>({ max: CACHE_SIZE, ttl: CACHE_TTL_MS });
  private readonly podReviews = new LRUCache<string, PodResult>({ max: CACHE_SIZE, ttl: CACHE_TTL_MS });
  private readonly authn: AuthenticationV1Api;
  private readonly authz: AuthorizationV1Api;
  readonly audience: string;

  constructor(private readonly options: AdminCallersOptions) {
    this.authn = options.client.kubeConfig.makeApiClient(AuthenticationV1Api);
    this.authz = options.client.kubeConfig.makeApiClient(AuthorizationV1Api);
    this.audience = options.audience ?? RUNTIMES_AUDIENCE;
  }

  async authenticate(headers: IncomingHttpHeaders): Promise<CallerResult> {
    const token = bearerOf(headers);
    if (!token) return { ok: false, status: 401, detail: "no bearer token was presented" };
    const authenticator = this.options.authenticator;
    if (authenticator?.providers.some((p) => p.recognizes(token))) {
      const result = await authenticator.authenticate(token);
      if (!result.authenticated)
        return { ok: false, status: 401, detail: `invalid bearer token: ${result.reason}` };
      await this.options.onAuthenticated?.(result.identity);
      const user = kubernetesUserOf(result.identity);
      return {
        ok: true,
        caller: {
          kind: "user",
          username: user.username,
          uid: user.uid,
          groups: user.groups,
          extra: user.extra,
          ...(result.identity.tenant ? { tenant: result.identity.tenant } : {}),
        },
      };
    }
    const key = createHash("sha256").update(token).digest("base64url");
    const cached = this.reviews.get(key);
    if (cached) return cached;
    let result: CallerResult;
    try {
      result = await this.review(token);
    } catch (err) {
      return { ok: false, status: 503, detail: `the token could not be reviewed: ${describeError(err)}` };
    }
    this.reviews.set(key, result);
    return result;
  }

  /**
   * The pod whose projected token for `audience` the request bears, in the cluster the Admin API
   * serves from (another route's callers: e.g. backup agents, with an audience of their own).
   */
  async authenticatePod(headers: IncomingHttpHeaders, audience: string): Promise<PodResult> {
    const token = bearerOf(headers);
    if (!token) return { ok: false, status: 401, detail: "no bearer token was presented" };
    const key = `${audience}\n${createHash("sha256").update(token).digest("base64url")}`;
    const cached = this.podReviews.get(key);
    if (cached) return cached;
    let result: PodResult;
    try {
      result = (await this.reviewPod(
        token,
        { name: "", client: this.options.client },
        audience,
        this.authn,
      )) ?? {
        ok: false,
        status: 401,
        detail: `the bearer token is no pod's service-account token for the audience ${audience}`,
      };
    } catch (err) {
      return { ok: false, status: 503, detail: `the token could not be reviewed: ${describeError(err)}` };
    }
    this.podReviews.set(key, result);
    return result;
  }

  /**
   * A token tenantry's providers do not know: first as a runtime pod's token for our audience,
   * then as any token the API server accepts (an administrator's, for delegation).
   */
  private async review(token: string): Promise<CallerResult> {
    const local = await this.agentReview(token, { name: "", client: this.options.client }, this.authn);
    if (local) return local;
    for (const cluster of (await this.options.runtimesClusters?.()) ?? []) {
      const remote = await this.agentReview(token, cluster);
      if (remote) return remote;
    }
    const plain = await this.authn.createTokenReview({ body: { spec: { token } } });
    const user = plain.status?.user;
    if (!plain.status?.authenticated || !user?.username) {
      return {
        ok: false,
        status: 401,
        detail: `invalid bearer token${plain.status?.error ? `: ${plain.status.error}` : ""}`,
      };
    }
    const tenant = user.extra?.[TENANT_EXTRA_KEY]?.[0];
    return {
      ok: true,
      caller: {
        kind: "user",
        username: user.username,
        ...(user.uid ? { uid: user.uid } : {}),
        groups: user.groups ?? [],
        extra: user.extra ?? {},
        ...(tenant ? { tenant } : {}),
      },
    };
  }

  /** The token as a runtime pod's, for our audience, in one cluster; undefined when it is not one. */
  private async agentReview(
    token: string,
    cluster: RuntimesCluster,
    api?: AuthenticationV1Api,
  ): Promise<CallerResult | undefined> {
    const result = await this.reviewPod(token, cluster, this.audience, api);
    if (!result?.ok) return result;
    const { pod, namespace, username } = result.pod;
    const podName = pod.metadata!.name!;
    // A runtime pod's service account: its Runtime is the pod's runtime label in the pod's namespace.
    const runtime = pod.metadata?.labels?.[RUNTIME_LABEL];
    if (!runtime) {
      return {
        ok: false,
        status: 401,
        detail: `pod ${namespace}/${podName} carries no ${RUNTIME_LABEL} label: it is no runtime's agent`,
      };
    }
    return {
      ok: true,
      caller: {
        kind: "agent",
        username,
        namespace,
        runtime,
        pod: podName,
        ...(cluster.name ? { cluster: cluster.name } : {}),
      },
    };
  }

  /**
   * The token as a pod's projected service-account token for `audience`, in one cluster: the pod
   * it was issued for, still there (same UID); undefined when it is no such token.
   */
  private async reviewPod(
    token: string,
    cluster: RuntimesCluster,
    audience: string,
    api = cluster.client.kubeConfig.makeApiClient(AuthenticationV1Api),
  ): Promise<PodResult | undefined> {
    const review = await api.createTokenReview({ body: { spec: { token, audiences: [audience] } } });
    const user = review.status?.user;
    const podName = user?.extra?.[POD_NAME_EXTRA]?.[0];
    if (!review.status?.authenticated || !review.status.audiences?.includes(audience) || !podName) {
      return undefined;
    }
    const username = user?.username ?? "";
    const podUid = user?.extra?.[POD_UID_EXTRA]?.[0];
    const namespace = /^system:serviceaccount:([^:]+):/.exec(username)?.[1];
    if (!namespace) return { ok: false, status: 401, detail: `${username} is not a service account` };
    const gone: Refusal = {
      ok: false,
      status: 401,
      detail: `pod ${namespace}/${podName} the token was issued for is gone`,
    };
    try {
      const pod = await cluster.client.core.readNamespacedPod({ name: podName, namespace });
      if (podUid && pod.metadata?.uid !== podUid) return gone;
      return {
        ok: true,
        pod: { username, namespace, pod, ...(cluster.name ? { cluster: cluster.name } : {}) },
      };
    } catch (err) {
      if (isNotFound(err)) return gone;
      throw err;
    }
  }

  /** Whether a user holds the delegation permission (in `namespace`, or cluster-wide when absent). */
  async mayDelegate(caller: UserCaller, namespace?: string): Promise<boolean> {
    const review = await this.authz.createSubjectAccessReview({
      body: {
        spec: {
          user: caller.username,
          ...(caller.uid ? { uid: caller.uid } : {}),
          groups: caller.groups,
          extra: caller.extra,
          resourceAttributes: { ...DELEGATE_PERMISSION, ...(namespace ? { namespace } : {}) },
        },
      },
    });
    return review.status?.allowed === true;
  }
}
