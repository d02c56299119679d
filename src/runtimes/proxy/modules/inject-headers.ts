/**
 * `inject-headers`: adds the headers its Secret holds to every request and WebSocket upgrade of
 * the service's runtimes, replacing the caller's of the same name — e.g. Jupyter's
 * `Authorization: token …`, so the service's own token never reaches the browser.
 */
import { validateHeaderName, validateHeaderValue } from "node:http";
import { HOP_BY_HOP_HEADERS } from "../../../common/index.js";
import { type ModuleSettings, ModuleSettingsError, type ServiceModule } from "./spi.js";

export const INJECT_HEADERS_MODULE = "inject-headers";

/** Headers that describe a connection or the message framing: a module may not set them. */
const FORBIDDEN = new Set([...HOP_BY_HOP_HEADERS, "content-length", "host"]);

/**
 * Headers from settings whose keys start with `prefix` (the rest of the key is the header name),
 * validated: a bad name or value throws naming the key.
 */
export function headerSettings(settings: ModuleSettings, prefix = ""): [string, string][] {
  const headers: [string, string][] = [];
  for (const [key, value] of Object.entries(settings)) {
    if (!key.startsWith(prefix)) continue;
    const name = key.slice(prefix.length);
    try {
      validateHeaderName(name);
    } catch {
      throw new ModuleSettingsError(key, `${JSON.stringify(name)} is not an HTTP header name`);
    }
    if (FORBIDDEN.has(name.toLowerCase())) {
      throw new ModuleSettingsError(key, `${name} describes the connection; a module may not set it`);
    }
    try {
      validateHeaderValue(name, value);
    } catch {
      throw new ModuleSettingsError(key, "the value holds characters a header may not (line breaks, NUL)");
    }
    headers.push([name, value]);
  }
  return headers;
}

export function injectHeadersModule(): ServiceModule {
  let headers: [string, string][] = [];
  return {
    init(settings) {
      // Validate everything first: a bad Secret leaves the previous headers in place.
      headers = headerSettings(settings);
    },
    http(_request, _response, options) {
      for (const [name, value] of headers) options.setHeader(name, value);
      return "continue";
    },
    wss(_request, _socket, _head, options) {
      for (const [name, value] of headers) options.setHeader(name, value);
      return "continue";
    },
  };
}
