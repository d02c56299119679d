import { useCallback, useEffect, useState } from "preact/hooks";
import { ApiError, api, onChange } from "./api.js";

export interface Loaded<T> {
  data?: T;
  error?: string;
  reload(): void;
}

/**
 * Data from the API, fetched again when the server says one of `kinds` changed (no polling); with
 * `name`, only changes of that name (or of none) count: a tenant's page ignores other tenants'.
 */
export function useLive<T>(path: string, kinds: string[], name?: string): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: string }>({});
  const load = useCallback(() => {
    api<T>("GET", path).then(
      (data) => setState({ data }),
      (err: unknown) =>
        setState((s) => ({ ...s, error: err instanceof ApiError ? err.message : String(err) })),
    );
  }, [path]);
  useEffect(() => {
    load();
    return onChange((changed) => {
      if (changed.some((c) => kinds.includes(c.kind) && (!name || !c.name || c.name === name))) load();
    });
  }, [load, kinds.join(","), name]);
  return { ...state, reload: load };
}
