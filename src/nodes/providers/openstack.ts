/**
 * The `openstack` provider: servers of Nova's compute API, reached through Keystone v3 with an
 * application credential or a password. Microversions are negotiated (2.52 at least, for tags at
 * creation); every server carries tenantry's tags and metadata (cluster id, WorkerNode name and
 * uid), so a restarted controller finds the machines it asked for by name and tag.
 */
import {
  applicationCredentialAuth,
  keystoneFetch,
  passwordAuth,
  subjectTokenOf,
} from "../../keystone/index.js";
import {
  type Flavor,
  firstIpv4,
  type Machine,
  type MachineOwner,
  type MachineProvider,
  type MachineRequest,
  type MachineState,
  ProviderError,
} from "./spi.js";

/** Tags at server creation need 2.52; nothing tenantry reads changed after this one. */
export const MIN_MICROVERSION = "2.52";
export const MAX_MICROVERSION = "2.96";

export type OpenStackCredentials =
  | { kind: "applicationCredential"; id: string; secret: string }
  | {
      kind: "password";
      username: string;
      password: string;
      userDomainName: string;
      projectName: string;
      projectDomainName: string;
    };

export interface OpenStackOptions {
  authUrl: string;
  credentials: OpenStackCredentials;
  region?: string;
  interface?: "public" | "internal" | "admin";
  /** Default image for requests that name none. */
  image?: string;
  networkMode?: "none" | "auto" | "list";
  networks?: string[];
  /** Per request (default 30 s). */
  timeoutMs?: number;
}

/** Metadata keys on every server (Nova metadata keys may hold letters, digits, `-`, `_`, `.`, `:`). */
export const METADATA = {
  cluster: "tenantry-cluster-id",
  node: "tenantry-worker-node",
  uid: "tenantry-worker-node-uid",
} as const;

export function clusterTag(clusterId: string): string {
  return `tenantry-cluster-${clusterId}`;
}

/** Compares microversions `2.x` numerically. */
export function compareMicroversions(a: string, b: string): number {
  const [amaj = 0, amin = 0] = a.split(".").map(Number);
  const [bmaj = 0, bmin = 0] = b.split(".").map(Number);
  return amaj - bmaj || amin - bmin;
}

/**
 * The microversion to speak to a Nova that supports `min`..`max` (its version document): the
 * newest both sides know, or an error saying why there is none.
 */
export function negotiateMicroversion(
  server: { version?: string; min_version?: string },
  url: string,
): string {
  const max = server.version;
  if (!max) {
    throw new ProviderError(
      `Nova at ${url} supports no microversions (its version document has none); tenantry needs ${MIN_MICROVERSION} or newer`,
      true,
    );
  }
  if (compareMicroversions(max, MIN_MICROVERSION) < 0) {
    throw new ProviderError(
      `Nova at ${url} supports microversions up to ${max}; tenantry needs ${MIN_MICROVERSION} or newer`,
      true,
    );
  }
  if (server.min_version && compareMicroversions(server.min_version, MAX_MICROVERSION) > 0) {
    throw new ProviderError(
      `Nova at ${url} supports microversions from ${server.min_version}; tenantry speaks up to ${MAX_MICROVERSION}`,
      true,
    );
  }
  return compareMicroversions(max, MAX_MICROVERSION) < 0 ? max : MAX_MICROVERSION;
}

interface CatalogEntry {
  type: string;
  endpoints: { interface: string; region?: string; region_id?: string; url: string }[];
}

interface Session {
  token: string;
  expiresAt: number;
  catalog: CatalogEntry[];
}

interface NovaServer {
  id: string;
  name: string;
  status: string;
  metadata?: Record<string, string>;
  addresses?: Record<string, { addr: string; version: number }[]>;
  accessIPv4?: string;
  accessIPv6?: string;
  fault?: { message?: string; details?: string };
  "OS-EXT-STS:task_state"?: string | null;
}

const STATES: Record<string, MachineState> = {
  BUILD: "Building",
  ACTIVE: "Active",
  ERROR: "Error",
  DELETED: "Deleting",
  SOFT_DELETED: "Deleting",
};

/** What a Nova (or Keystone, Glance) error body says, whichever of its shapes it has. */
export function errorMessage(body: unknown): string | undefined {
  if (!body || typeof body !== "object") return undefined;
  const record = body as Record<string, unknown>;
  if (typeof record.message === "string") return record.message;
  if (record.error && typeof record.error === "object") {
    const error = record.error as Record<string, unknown>;
    if (typeof error.message === "string") return error.message;
  }
  for (const value of Object.values(record)) {
    if (value && typeof value === "object" && typeof (value as { message?: unknown }).message === "string")
      return (value as { message: string }).message;
  }
  return undefined;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export class OpenStackProvider implements MachineProvider {
  readonly type = "openstack";
  private session?: Promise<Session>;
  private microversion?: Promise<string>;
  private flavorIds?: { at: number; byName: Map<string, string> };

  constructor(private readonly options: OpenStackOptions) {}

  private get timeoutMs(): number {
    return this.options.timeoutMs ?? 30_000;
  }

  private signal(signal?: AbortSignal): AbortSignal {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    return signal ? AbortSignal.any([signal, timeout]) : timeout;
  }

  private authBody(): unknown {
    const c = this.options.credentials;
    if (c.kind === "applicationCredential") return applicationCredentialAuth(c);
    return passwordAuth(
      { name: c.username, domain: c.userDomainName, password: c.password },
      { name: c.projectName, domain: c.projectDomainName },
    );
  }

  private async authenticate(signal?: AbortSignal): Promise<Session> {
    const url = `${this.options.authUrl.replace(/\/+$/, "")}/auth/tokens`;
    let response: Response;
    try {
      response = await keystoneFetch(url, {
        method: "POST",
        body: this.authBody(),
        timeoutMs: this.timeoutMs,
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      throw new ProviderError(
        `Keystone at ${this.options.authUrl} is unreachable: ${(err as Error).message}`,
        false,
      );
    }
    const text = await response.text();
    const body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    if (!response.ok) {
      const reason = errorMessage(body) ?? text.slice(0, 300);
      // A refused credential is the operator's to fix; the provider's status says so and tenantry retries.
      throw new ProviderError(
        `Keystone refused tenantry's credentials (HTTP ${response.status}): ${reason}`,
        false,
        response.status,
      );
    }
    const token = subjectTokenOf(response);
    const info = body.token as { expires_at?: string; catalog?: CatalogEntry[] } | undefined;
    if (!token || !info) throw new ProviderError("Keystone issued a token without X-Subject-Token", false);
    return {
      token,
      // Renewed five minutes early, so a request never carries a token expiring on the way.
      expiresAt: (info.expires_at ? Date.parse(info.expires_at) : Date.now() + 3_600_000) - 5 * 60_000,
      catalog: info.catalog ?? [],
    };
  }

  private async currentSession(signal?: AbortSignal): Promise<Session> {
    const existing = this.session;
    if (existing) {
      const session = await existing.catch(() => undefined);
      if (session && session.expiresAt > Date.now()) return session;
      if (this.session === existing) this.session = undefined;
    }
    this.session ??= this.authenticate(signal);
    const pending = this.session;
    try {
      return await pending;
    } catch (err) {
      if (this.session === pending) this.session = undefined;
      throw err;
    }
  }

  private endpoint(session: Session, type: string): string {
    const wanted = this.options.interface ?? "public";
    const entry = session.catalog.find((e) => e.type === type);
    const endpoint = entry?.endpoints.find(
      (e) =>
        e.interface === wanted &&
        (!this.options.region || e.region_id === this.options.region || e.region === this.options.region),
    );
    if (!endpoint) {
      throw new ProviderError(
        `Keystone's catalog has no ${wanted} ${type} endpoint${this.options.region ? ` in region ${this.options.region}` : ""}`,
        false,
      );
    }
    return endpoint.url.replace(/\/+$/, "");
  }

  private async negotiate(session: Session, signal?: AbortSignal): Promise<string> {
    const base = this.endpoint(session, "compute");
    const versionUrl = base.replace(/(\/v2(\.1)?)(\/.*)?$/, "$1");
    const response = await fetch(versionUrl, {
      headers: { Accept: "application/json", "X-Auth-Token": session.token },
      signal: this.signal(signal),
    }).catch((err: Error) => {
      throw new ProviderError(`Nova at ${versionUrl} is unreachable: ${err.message}`, false);
    });
    const body = (await response.json().catch(() => ({}))) as {
      version?: { version?: string; min_version?: string };
    };
    if (!response.ok || !body.version) {
      throw new ProviderError(
        `Nova at ${versionUrl} answered ${response.status} to its version document`,
        false,
      );
    }
    return negotiateMicroversion(body.version, versionUrl);
  }

  /** The negotiated microversion (asked once). */
  async computeMicroversion(signal?: AbortSignal): Promise<string> {
    const session = await this.currentSession(signal);
    this.microversion ??= this.negotiate(session, signal);
    const pending = this.microversion;
    return pending.catch((err) => {
      if (this.microversion === pending) this.microversion = undefined;
      throw err;
    });
  }

  /** A call to a catalog service; a 401 gets one new token and one retry. */
  private async call<T>(
    service: "compute" | "image",
    method: string,
    path: string,
    body?: unknown,
    signal?: AbortSignal,
    retried = false,
  ): Promise<{ status: number; body: T }> {
    const session = await this.currentSession(signal);
    const headers: Record<string, string> = { Accept: "application/json", "X-Auth-Token": session.token };
    if (service === "compute") {
      const version = await this.computeMicroversion(signal);
      headers["OpenStack-API-Version"] = `compute ${version}`;
      headers["X-OpenStack-Nova-API-Version"] = version;
    }
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const url = `${this.endpoint(session, service)}${path}`;
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: this.signal(signal),
      });
    } catch (err) {
      throw new ProviderError(`${service} API at ${url} is unreachable: ${(err as Error).message}`, false);
    }
    if (response.status === 401 && !retried) {
      this.session = undefined;
      return this.call(service, method, path, body, signal, true);
    }
    const text = await response.text();
    let parsed: unknown = {};
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      parsed = { message: text.slice(0, 500) };
    }
    if (!response.ok && response.status !== 404) {
      const message = errorMessage(parsed) ?? `HTTP ${response.status}`;
      // 4xx (bad flavor, image, quota…) will not change by asking again; 5xx and 409 may.
      const permanent =
        response.status >= 400 && response.status < 500 && ![408, 409, 429].includes(response.status);
      throw new ProviderError(message, permanent, response.status);
    }
    return { status: response.status, body: parsed as T };
  }

  async listFlavors(signal?: AbortSignal): Promise<Flavor[]> {
    const { body } = await this.call<{
      flavors: { id: string; name: string; vcpus: number; ram: number; disk: number }[];
    }>("compute", "GET", "/flavors/detail", undefined, signal);
    this.flavorIds = { at: Date.now(), byName: new Map(body.flavors.map((f) => [f.name, f.id])) };
    return body.flavors
      .map((f) => ({ name: f.name, vcpus: f.vcpus, memoryMiB: f.ram, diskGiB: f.disk }))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  private async flavorId(name: string, signal?: AbortSignal): Promise<string> {
    if (!this.flavorIds || Date.now() - this.flavorIds.at > 60_000 || !this.flavorIds.byName.has(name))
      await this.listFlavors(signal);
    const id = this.flavorIds?.byName.get(name);
    if (!id) throw new ProviderError(`flavor "${name}" does not exist in this OpenStack project`, true, 400);
    return id;
  }

  private async imageId(image: string, signal?: AbortSignal): Promise<string> {
    if (UUID.test(image)) return image;
    const { body } = await this.call<{ images?: { id: string }[] }>(
      "image",
      "GET",
      `/v2/images?name=${encodeURIComponent(image)}`,
      undefined,
      signal,
    );
    const [found, second] = body.images ?? [];
    if (!found) throw new ProviderError(`image "${image}" does not exist`, true, 400);
    if (second) throw new ProviderError(`image name "${image}" is ambiguous: name it by id`, true, 400);
    return found.id;
  }

  private toMachine(server: NovaServer): Machine {
    const addresses = Object.values(server.addresses ?? {})
      .flat()
      .sort((a, b) => a.version - b.version)
      .map((a) => a.addr);
    if (server.accessIPv4 && !addresses.includes(server.accessIPv4)) addresses.push(server.accessIPv4);
    const ipv4 = firstIpv4(addresses);
    const ordered = ipv4 ? [ipv4, ...addresses.filter((a) => a !== ipv4)] : addresses;
    const deleting = server["OS-EXT-STS:task_state"] === "deleting";
    return {
      id: server.id,
      name: server.metadata?.[METADATA.node] ?? server.name,
      uid: server.metadata?.[METADATA.uid] ?? "",
      clusterId: server.metadata?.[METADATA.cluster] ?? "",
      state: deleting ? "Deleting" : (STATES[server.status] ?? "Stopped"),
      status: server.status,
      addresses: ordered,
      ...(server.fault?.message ? { message: server.fault.message } : {}),
    };
  }

  async createMachine(request: MachineRequest, signal?: AbortSignal): Promise<Machine> {
    const image = request.image ?? this.options.image;
    if (!image)
      throw new ProviderError(
        "no image: name one in spec.image or the NodeProvider's spec.openstack.image",
        true,
        400,
      );
    const [flavorRef, imageRef] = await Promise.all([
      this.flavorId(request.flavor, signal),
      this.imageId(image, signal),
    ]);
    const mode = this.options.networkMode ?? "auto";
    const server = {
      name: request.name,
      flavorRef,
      imageRef,
      user_data: Buffer.from(request.userData).toString("base64"),
      metadata: {
        [METADATA.cluster]: request.clusterId,
        [METADATA.node]: request.name,
        [METADATA.uid]: request.uid,
      },
      tags: ["tenantry", clusterTag(request.clusterId)],
      networks: mode === "list" ? (this.options.networks ?? []).map((uuid) => ({ uuid })) : mode,
      ...(request.keyPair ? { key_name: request.keyPair } : {}),
      ...(request.availabilityZone ? { availability_zone: request.availabilityZone } : {}),
      ...(request.securityGroups?.length && mode !== "none"
        ? { security_groups: request.securityGroups.map((name) => ({ name })) }
        : {}),
    };
    const { body } = await this.call<{ server?: { id: string } }>(
      "compute",
      "POST",
      "/servers",
      { server },
      signal,
    );
    const id = body.server?.id;
    if (!id) throw new ProviderError("Nova accepted the server but returned no id", false);
    const { status, body: shown } = await this.call<{ server: NovaServer }>(
      "compute",
      "GET",
      `/servers/${id}`,
      undefined,
      signal,
    );
    if (status === 404)
      return {
        id,
        name: request.name,
        uid: request.uid,
        clusterId: request.clusterId,
        state: "Building",
        status: "BUILD",
        addresses: [],
      };
    return this.toMachine(shown.server);
  }

  private async servers(query: string, signal?: AbortSignal): Promise<NovaServer[]> {
    const { body } = await this.call<{ servers?: NovaServer[] }>(
      "compute",
      "GET",
      `/servers/detail?${query}`,
      undefined,
      signal,
    );
    return body.servers ?? [];
  }

  async findMachine(owner: MachineOwner, signal?: AbortSignal): Promise<Machine | undefined> {
    const escaped = owner.name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const servers = await this.servers(
      `tags=${encodeURIComponent(clusterTag(owner.clusterId))}&name=${encodeURIComponent(`^${escaped}$`)}`,
      signal,
    );
    const mine = servers
      .map((s) => this.toMachine(s))
      .filter((m) => m.name === owner.name && m.uid === owner.uid && m.clusterId === owner.clusterId);
    return mine.find((m) => m.state !== "Deleting") ?? mine[0];
  }

  async listMachines(clusterId: string, signal?: AbortSignal): Promise<Machine[]> {
    const servers = await this.servers(`tags=${encodeURIComponent(clusterTag(clusterId))}`, signal);
    return servers.map((s) => this.toMachine(s)).filter((m) => m.clusterId === clusterId);
  }

  async deleteMachine(machine: Pick<Machine, "id" | "name">, signal?: AbortSignal): Promise<void> {
    await this.call("compute", "DELETE", `/servers/${encodeURIComponent(machine.id)}`, undefined, signal);
  }
}
