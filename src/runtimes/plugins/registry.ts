/**
 * One plugin per RuntimeService, from its `spec.plugin`: the built-in one, an HTTP endpoint or an
 * executable. The optional callouts of a plugin reached over a transport are offered only once its
 * init said it implements them (the service's `status.capabilities`).
 */
import type { RuntimeService } from "../api/runtime-service.js";
import { ExecPlugin } from "./exec.js";
import { GenericPlugin } from "./generic.js";
import { HttpPlugin } from "./http.js";
import type { Callout, ServicePlugin } from "./spi.js";

const OPTIONAL: readonly [Callout, keyof ServicePlugin][] = [
  ["check-service", "checkService"],
  ["deregister-service", "deregisterService"],
  ["image-pull", "imagePull"],
  ["image-cleanup", "imageCleanup"],
];

export class PluginRegistry {
  private readonly plugins = new Map<string, { ref: string; plugin: ServicePlugin }>();
  private readonly generic = new GenericPlugin();

  /** The plugin `service` names, with every callout its transport can carry (for init). */
  transportOf(service: RuntimeService): ServicePlugin {
    const name = service.metadata?.name ?? "";
    const ref = JSON.stringify(service.spec.plugin);
    const known = this.plugins.get(name);
    if (known?.ref === ref) return known.plugin;
    const { plugin: spec } = service.spec;
    let plugin: ServicePlugin;
    if (spec.http) plugin = new HttpPlugin(spec.http);
    else if (spec.exec) plugin = new ExecPlugin(spec.exec);
    else if (spec.builtin === "generic") plugin = this.generic;
    else throw new Error(`RuntimeService ${name}: spec.plugin names no plugin tenantry knows`);
    this.plugins.set(name, { ref, plugin });
    return plugin;
  }

  /**
   * The plugin `service` names, offering only the optional callouts its init reported. A built-in
   * plugin is offered whole.
   */
  pluginOf(service: RuntimeService): ServicePlugin {
    const transport = this.transportOf(service);
    if (service.spec.plugin.builtin) return transport;
    const capabilities = new Set(service.status?.capabilities ?? []);
    const view: ServicePlugin = {
      init: () => transport.init(),
      deployService: (request) => transport.deployService(request),
    };
    for (const [callout, method] of OPTIONAL) {
      const implementation = transport[method];
      if (capabilities.has(callout) && implementation) {
        Object.assign(view, { [method]: implementation.bind(transport) });
      }
    }
    return view;
  }

  forget(serviceName: string): void {
    this.plugins.delete(serviceName);
  }
}
