/**
 * Which service module serves each RuntimeService, and its life: created when a service names it,
 * `init` with the service's Secret at start and again whenever that Secret changes, closed when the
 * service goes or names another. A service whose module is unknown, whose Secret is missing or whose
 * settings the module refused answers 503 naming why — never forwarded without its module.
 */
import { createHash } from "node:crypto";
import type { V1Secret } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { Authenticator } from "../../../identity/index.js";
import { describeError } from "../../../kube/index.js";
import type { RuntimeService } from "../../api/runtime-service.js";
import { MODULE_SECRETS_NAMESPACE, type RouteSource } from "../source.js";
import { INJECT_HEADERS_MODULE, injectHeadersModule } from "./inject-headers.js";
import type { ModuleSettings, ServiceModule, ServiceModuleFactory } from "./spi.js";

/**
 * Modules the proxy no longer has, and why: a service naming one is told what took its place.
 */
export const RETIRED_MODULES: Readonly<Record<string, string>> = {
  "owner-auth":
    "is no longer a module: the proxy signs in every service's runtimes' users itself (spec.routeAccess Owner, the default; spec.access on a Runtime shares it); remove spec.proxyModule, or name inject-headers for its inject.* settings",
};

/** The modules every proxy knows. */
export const BUILTIN_MODULES: Readonly<Record<string, ServiceModuleFactory>> = {
  [INJECT_HEADERS_MODULE]: () => injectHeadersModule(),
};

export type ModuleState =
  /** The service names no module, or is no RuntimeService the proxy knows (see `missing`). */
  | { kind: "none" }
  | { kind: "ready"; name: string; module: ServiceModule }
  /** Its first init is running: requests wait for it. */
  | { kind: "pending"; name: string; settled: Promise<void> }
  | { kind: "unavailable"; name: string; detail: string };

interface Entry {
  service: string;
  name: string;
  secretName?: string;
  module?: ServiceModule;
  /** Digest of the settings of the last init started ("" before any). */
  digest: string;
  generation: number;
  state: ModuleState;
}

export interface ServiceModulesOptions {
  factories?: Readonly<Record<string, ServiceModuleFactory>>;
  authenticator?: Authenticator;
  logger: Logger;
  /** Called after every init, successful or not (metrics, tests). */
  onInit?: (service: string, module: string, error?: unknown) => void;
}

const NONE: ModuleState = { kind: "none" };

export class ServiceModules {
  private readonly factories: Readonly<Record<string, ServiceModuleFactory>>;
  private readonly entries = new Map<string, Entry>();
  private readonly inits = new Set<Promise<void>>();
  private source?: RouteSource;

  constructor(private readonly options: ServiceModulesOptions) {
    this.factories = { ...BUILTIN_MODULES, ...options.factories };
  }

  get known(): string[] {
    return Object.keys(this.factories).sort();
  }

  /** Follows the source's services and Secrets; returns a function that stops following. */
  attach(source: RouteSource): () => void {
    this.source = source;
    return source.subscribe({
      service: (_previous, current) => {
        if (current) this.serviceChanged(current);
        else if (_previous) this.remove(_previous.metadata!.name!);
      },
      secret: (previous, current) => {
        const name = (current ?? previous)?.metadata?.name;
        if (!name) return;
        for (const entry of this.entries.values()) if (entry.secretName === name) this.configure(entry);
      },
    });
  }

  /** The module state of `service` (a Map lookup: called for every request). */
  state(service: string): ModuleState {
    return this.entries.get(service)?.state ?? NONE;
  }

  /** Resolves once every init started so far has ended. */
  async settled(): Promise<void> {
    while (this.inits.size) await Promise.allSettled([...this.inits]);
  }

  close(): void {
    for (const service of [...this.entries.keys()]) this.remove(service);
  }

  private serviceChanged(service: RuntimeService): void {
    const serviceName = service.metadata!.name!;
    const ref = service.spec.proxyModule;
    const existing = this.entries.get(serviceName);
    if (!ref) {
      if (existing) this.remove(serviceName);
      return;
    }
    if (existing && existing.name === ref.name && existing.secretName === ref.secretRef?.name) return;
    if (existing) this.remove(serviceName);
    const entry: Entry = {
      service: serviceName,
      name: ref.name,
      ...(ref.secretRef ? { secretName: ref.secretRef.name } : {}),
      digest: "",
      generation: 0,
      state: { kind: "unavailable", name: ref.name, detail: "not configured yet" },
    };
    const factory = this.factories[ref.name];
    if (factory) {
      try {
        entry.module = factory({
          service: serviceName,
          ...(this.options.authenticator ? { authenticator: this.options.authenticator } : {}),
          logger: this.options.logger.child({ module: ref.name, service: serviceName }),
        });
      } catch (err) {
        entry.state = this.unavailable(entry, `could not be created: ${describeError(err)}`);
      }
    } else {
      entry.state = this.unavailable(
        entry,
        RETIRED_MODULES[ref.name] ?? `is not known to this proxy (it knows ${this.known.join(", ")})`,
      );
    }
    this.entries.set(serviceName, entry);
    if (entry.module) this.configure(entry);
  }

  private remove(service: string): void {
    const entry = this.entries.get(service);
    if (!entry) return;
    this.entries.delete(service);
    entry.generation++;
    try {
      entry.module?.close?.();
    } catch (err) {
      this.options.logger.warn({ err: describeError(err), service }, "service module failed to close");
    }
  }

  /** (Re)initialises the entry's module when its settings changed (or it has none yet). */
  private configure(entry: Entry): void {
    const module = entry.module;
    if (!module) return;
    let settings: ModuleSettings = {};
    if (entry.secretName) {
      const secret = this.source?.secret(entry.secretName);
      if (!secret) {
        entry.digest = "";
        entry.generation++;
        entry.state = this.unavailable(
          entry,
          `has no settings: Secret ${MODULE_SECRETS_NAMESPACE}/${entry.secretName} (spec.proxyModule.secretRef of service ${entry.service}) does not exist`,
        );
        return;
      }
      settings = secretSettings(secret);
    }
    const digest = settingsDigest(settings);
    if (digest === entry.digest) return;
    entry.digest = digest;
    const generation = ++entry.generation;
    const init = (async () => {
      // Runs after the pending state below is set, so that a synchronous answer is not overwritten.
      await null;
      try {
        await module.init(settings);
        if (entry.generation !== generation) return;
        entry.state = { kind: "ready", name: entry.name, module };
        this.options.logger.info(
          { service: entry.service, module: entry.name },
          "service module initialised",
        );
        this.options.onInit?.(entry.service, entry.name);
      } catch (err) {
        if (entry.generation !== generation) return;
        entry.state = this.unavailable(entry, `refused its settings: ${describeError(err)}`);
        this.options.logger.warn(
          { service: entry.service, module: entry.name, err: describeError(err) },
          "service module init failed",
        );
        this.options.onInit?.(entry.service, entry.name, err);
      }
    })();
    // The first init: requests wait for it rather than pass without the module.
    if (entry.state.kind !== "ready") entry.state = { kind: "pending", name: entry.name, settled: init };
    this.inits.add(init);
    void init.finally(() => this.inits.delete(init));
  }

  private unavailable(entry: Entry, why: string): ModuleState {
    return {
      kind: "unavailable",
      name: entry.name,
      detail: `service module "${entry.name}" of service ${entry.service} ${why}`,
    };
  }
}

/** A Secret's data as settings (base64 decoded to UTF-8). */
export function secretSettings(secret: V1Secret): ModuleSettings {
  const settings: Record<string, string> = {};
  for (const [key, value] of Object.entries(secret.data ?? {})) {
    settings[key] = Buffer.from(value, "base64").toString("utf8");
  }
  return settings;
}

function settingsDigest(settings: ModuleSettings): string {
  const sorted = Object.keys(settings)
    .sort()
    .map((k) => [k, settings[k]]);
  return createHash("sha256").update(JSON.stringify(sorted)).digest("base64url");
}
