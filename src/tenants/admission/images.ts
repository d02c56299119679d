import type { ImagePullPolicy, Tenant } from "../api/tenant.js";
import { type AllowedClasses, describeAllowedClasses } from "./classes.js";

/** A container image reference split as the container runtime reads it. */
export interface ImageReference {
  /** Registry host, port included: `docker.io` when the reference names none. */
  registry: string;
  /** Registry and path without tag or digest: `docker.io/library/nginx`. */
  repository: string;
  tag?: string;
  digest?: string;
}

const DOCKER_HUB = "docker.io";

/**
 * Splits an image reference with the rules of the distribution reference grammar: the first
 * component is a registry only when it looks like a host (a dot or a port, or `localhost`); an
 * image without one is on Docker Hub, and a Docker Hub image without a path is under `library/`.
 */
export function parseImage(image: string): ImageReference {
  let rest = image;
  let digest: string | undefined;
  const at = rest.indexOf("@");
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(":");
  if (colon > rest.lastIndexOf("/")) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }
  const slash = rest.indexOf("/");
  const first = slash >= 0 ? rest.slice(0, slash) : "";
  const isHost = slash >= 0 && (first.includes(".") || first.includes(":") || first === "localhost");
  let registry = isHost ? first : DOCKER_HUB;
  if (registry === "index.docker.io") registry = DOCKER_HUB;
  let path = isHost ? rest.slice(slash + 1) : rest;
  if (registry === DOCKER_HUB && !path.includes("/")) path = `library/${path}`;
  return {
    registry,
    repository: `${registry}/${path}`,
    ...(tag !== undefined ? { tag } : {}),
    ...(digest !== undefined ? { digest } : {}),
  };
}

/** Whether spec.allowed.containerRegistries lets an image in: a listed registry or path prefix, or the regex. */
export function registryAllowed(rule: AllowedClasses | undefined, image: string): boolean {
  if (!rule) return true;
  const { repository } = parseImage(image);
  if (rule.names?.some((name) => repository === name || repository.startsWith(`${name}/`))) return true;
  if (!rule.regex) return false;
  try {
    return new RegExp(rule.regex).test(repository);
  } catch {
    // Tenant validation refuses regexes that do not compile; one that slipped in matches nothing.
    return false;
  }
}

export function registryViolation(
  field: string,
  image: string | undefined,
  tenant: Tenant,
): string | undefined {
  const rule = tenant.spec.allowed?.containerRegistries;
  if (!rule || image === undefined || registryAllowed(rule, image)) return;
  const { registry, repository } = parseImage(image);
  return `${field}: image "${image}" (${repository}, registry "${registry}") is not allowed in tenant "${tenant.metadata!.name}" (spec.allowed.containerRegistries: ${describeAllowedClasses(rule)})`;
}

/**
 * The imagePullPolicy kube-apiserver fills in when a container leaves it out: Always for `latest`
 * or no tag at all, otherwise IfNotPresent. Admission only ever sees the filled-in value.
 */
export function defaultPullPolicy(image: string): ImagePullPolicy {
  const { tag, digest } = parseImage(image);
  return tag === "latest" || (tag === undefined && digest === undefined) ? "Always" : "IfNotPresent";
}

/**
 * The policy a container should get in place of the one it has, or undefined to leave it. Only a
 * value the API server may have filled in is replaced (with the first allowed one): a policy the
 * container set to something else is the author's choice, and is judged by pullPolicyViolation.
 */
export function pullPolicyDefault(
  policy: string | undefined,
  image: string | undefined,
  allowed: readonly ImagePullPolicy[] | undefined,
): ImagePullPolicy | undefined {
  if (!allowed?.length || (policy && allowed.includes(policy as ImagePullPolicy))) return;
  if (policy !== undefined && (image === undefined || policy !== defaultPullPolicy(image))) return;
  return allowed[0];
}

export function pullPolicyViolation(
  field: string,
  policy: string | undefined,
  tenant: Tenant,
): string | undefined {
  const allowed = tenant.spec.allowed?.imagePullPolicies;
  if (!allowed?.length || policy === undefined || allowed.includes(policy as ImagePullPolicy)) return;
  return `${field}: "${policy}" is not allowed in tenant "${tenant.metadata!.name}" (spec.allowed.imagePullPolicies: ${allowed.join(", ")})`;
}
