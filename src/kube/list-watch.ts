import type { KubernetesObject } from "@kubernetes/client-node";
import type { ClusterClient } from "./clients.js";

/** Which objects an informer follows. */
export interface ResourceSelector {
  apiVersion: string;
  kind: string;
  /** Only this namespace; all namespaces (or a cluster-scoped kind) when undefined. */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

export interface ListResult<T> {
  items: T[];
  /** Collection resourceVersion to start watching from. */
  resourceVersion: string;
}

/** One decoded line of a watch stream. `object` is a Status for ERROR events. */
export interface RawWatchEvent {
  type: string;
  object: unknown;
}

export interface WatchHandle {
  /** Closes the stream; `onClose` is then reported with a {@link WatchAbortedError}. */
  abort(): void;
}

/** Where an {@link Informer} gets its data; the Kubernetes implementation is {@link KubeListWatch}. */
export interface ListWatchSource<T> {
  readonly cluster: string;
  /** For logs, e.g. "v1/ConfigMap in namespace x". */
  readonly description: string;
  list(signal: AbortSignal): Promise<ListResult<T>>;
  /**
   * Opens a watch starting after `resourceVersion`. `onClose` is called exactly once, with
   * no argument when the server ended the stream cleanly, or with the error otherwise; no
   * `onEvent` follows it.
   */
  watch(
    resourceVersion: string,
    timeoutSeconds: number,
    onEvent: (event: RawWatchEvent) => void,
    onClose: (error?: unknown) => void,
  ): WatchHandle;
}

export class WatchAbortedError extends Error {
  constructor() {
    super("watch aborted by the client");
    this.name = "WatchAbortedError";
  }
}

interface RawList<T> {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: T[];
}

/** List and watch of one resource in one cluster through client-node's `Watch`. */
export class KubeListWatch<T extends KubernetesObject> implements ListWatchSource<T> {
  readonly cluster: string;
  readonly description: string;
  private collectionPath?: string;

  constructor(
    private readonly client: ClusterClient,
    private readonly selector: ResourceSelector,
  ) {
    this.cluster = client.name;
    const scope = selector.namespace ? ` in namespace ${selector.namespace}` : "";
    const labels = selector.labelSelector ? ` with labels ${selector.labelSelector}` : "";
    const fields = selector.fieldSelector ? ` with fields ${selector.fieldSelector}` : "";
    this.description = `${selector.apiVersion}/${selector.kind}${scope}${labels}${fields}`;
  }

  async list(signal: AbortSignal): Promise<ListResult<T>> {
    const path = await this.path();
    const items: T[] = [];
    let continueToken: string | undefined;
    let resourceVersion = "";
    do {
      // No limit: kube-apiserver serves a consistent list without one from its watch cache (once
      // that has caught up with etcd), while every page after the first of a paginated list is
      // read from etcd. Under a burst of writes, paging 10,000 objects out of etcd took over a
      // minute; the whole list from the cache is one response. Continue tokens are still followed
      // should a server page anyway.
      const page = (await this.client.objects.getJson(
        path,
        {
          continue: continueToken,
          labelSelector: this.selector.labelSelector,
          fieldSelector: this.selector.fieldSelector,
        },
        signal,
      )) as RawList<T>;
      // List items carry no apiVersion/kind on the wire, watch events do; align them.
      for (const item of page.items ?? []) {
        items.push({ ...item, apiVersion: this.selector.apiVersion, kind: this.selector.kind });
      }
      resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
      continueToken = page.metadata?.continue || undefined;
    } while (continueToken);
    return { items, resourceVersion };
  }

  watch(
    resourceVersion: string,
    timeoutSeconds: number,
    onEvent: (event: RawWatchEvent) => void,
    onClose: (error?: unknown) => void,
  ): WatchHandle {
    let closed = false;
    let connection: AbortController | undefined;
    const close = (error?: unknown) => {
      if (closed) return;
      closed = true;
      onClose(error);
    };
    const open = async () => {
      const path = await this.path();
      if (closed) return;
      const query = {
        allowWatchBookmarks: true,
        resourceVersion,
        timeoutSeconds,
        labelSelector: this.selector.labelSelector,
        fieldSelector: this.selector.fieldSelector,
      };
      const controller = await this.client.watch.watch(
        path,
        query,
        (type, object) => {
          if (!closed) onEvent({ type, object });
        },
        // client-node passes null on a clean end of stream.
        (error) => close(error ?? undefined),
      );
      // The request may have been aborted while it was still connecting.
      if (closed) controller.abort();
      else connection = controller;
    };
    // watch() rejects (rather than calling done) when it fails before connecting, e.g. on exec auth.
    open().catch((error) => close(error));
    return {
      abort: () => {
        // Report first: aborting the request makes client-node report its own AbortError.
        close(new WatchAbortedError());
        connection?.abort();
      },
    };
  }

  private async path(): Promise<string> {
    this.collectionPath ??= await this.client.objects.collectionPath(
      this.selector.apiVersion,
      this.selector.kind,
      this.selector.namespace,
    );
    return this.collectionPath;
  }
}
