import {
  ApiException,
  HttpMethod,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  type PatchStrategy,
  type RequestContext,
} from "@kubernetes/client-node";

export interface SubresourcePatchOptions {
  fieldManager?: string;
  force?: boolean;
  dryRun?: boolean;
}

/**
 * client-node's generic object API plus the two things it cannot do itself: resolve the URL
 * of a resource collection (for watches), and target a subresource such as `/status`.
 * Both reuse its discovery cache, authentication and HTTP stack through its protected
 * members, so no request here bypasses the kubeconfig's credentials or TLS settings.
 */
export class DynamicObjectApi extends KubernetesObjectApi {
  static forKubeConfig(kubeConfig: KubeConfig): DynamicObjectApi {
    const api = kubeConfig.makeApiClient(DynamicObjectApi);
    api.setDefaultNamespace(kubeConfig);
    return api;
  }

  /**
   * URL path of a collection, e.g. `/api/v1/namespaces/ns/configmaps`, or the cluster-wide
   * collection when `namespace` is undefined. Resolved through API discovery, which is cached.
   */
  collectionPath(apiVersion: string, kind: string, namespace?: string): Promise<string> {
    return this.specUriPath({ apiVersion, kind, metadata: namespace ? { namespace } : {} }, "list");
  }

  /** URL path of one object (its namespace defaults to the kubeconfig context's namespace). */
  objectPath(obj: KubernetesObject): Promise<string> {
    // specUriPath fills in defaults on the object it is given; work on a copy.
    const header = { apiVersion: obj.apiVersion, kind: obj.kind, metadata: { ...obj.metadata } };
    return this.specUriPath(header, "read");
  }

  /**
   * GET returning the JSON exactly as the API server sent it. The typed APIs turn timestamps
   * into Date objects while watch events carry strings; informers read lists through here so
   * listed and watched objects have the same shape.
   */
  async getJson(
    path: string,
    query: Record<string, string | undefined> = {},
    signal?: AbortSignal,
  ): Promise<unknown> {
    return JSON.parse(await this.getText(path, query, signal, "application/json"));
  }

  /** GET returning the body as text, e.g. kube-apiserver's `/metrics` or a Service proxy's answer. */
  async getText(
    path: string,
    query: Record<string, string | undefined> = {},
    signal?: AbortSignal,
    accept = "*/*",
  ): Promise<string> {
    const request = this.configuration.baseServer.makeRequestContext(path, HttpMethod.GET);
    request.setHeaderParam("Accept", accept);
    for (const [name, value] of Object.entries(query)) {
      if (value !== undefined) request.setQueryParam(name, value);
    }
    if (signal) request.setSignal(signal);
    await this.authenticate(request);
    const response = await this.configuration.httpApi.send(request).toPromise();
    const text = await response.body.text();
    if (response.httpStatusCode < 200 || response.httpStatusCode > 299) {
      throw new ApiException(response.httpStatusCode, "Unsuccessful HTTP Request", text, response.headers);
    }
    return text;
  }

  /**
   * POST of a text body, answering whatever status and body come back (no throw): a probe through
   * a Service proxy, where the status is the answer.
   */
  async postText(
    path: string,
    body: string,
    contentType = "application/json",
  ): Promise<{ status: number; text: string }> {
    const request = this.configuration.baseServer.makeRequestContext(path, HttpMethod.POST);
    request.setHeaderParam("Accept", "*/*");
    request.setHeaderParam("Content-Type", contentType);
    request.setBody(body);
    await this.authenticate(request);
    const response = await this.configuration.httpApi.send(request).toPromise();
    return { status: response.httpStatusCode, text: await response.body.text() };
  }

  /** PATCH against `<object>/<subresource>`, e.g. server-side apply of `/status`. */
  patchSubresource<T extends KubernetesObject>(
    obj: T,
    subresource: string,
    strategy: PatchStrategy,
    options: SubresourcePatchOptions = {},
  ): Promise<T> {
    return this.patchRaw(obj, strategy, options, subresource);
  }

  /**
   * PATCH with the object sent as plain JSON. KubernetesObjectApi.patch re-serializes known kinds
   * through client-node's model classes, which silently drop fields they spell differently
   * (a NetworkPolicy rule's `from` is `_from` there) and every field of a CRD they do not know.
   */
  async patchRaw<T extends KubernetesObject>(
    obj: T,
    strategy: PatchStrategy,
    options: SubresourcePatchOptions = {},
    subresource?: string,
  ): Promise<T> {
    const objectPath = await this.objectPath(obj);
    const path = subresource ? `${objectPath}/${subresource}` : objectPath;
    const request = this.configuration.baseServer.makeRequestContext(path, HttpMethod.PATCH);
    request.setHeaderParam("Accept", "application/json");
    request.setHeaderParam("Content-Type", strategy);
    if (options.fieldManager !== undefined) request.setQueryParam("fieldManager", options.fieldManager);
    if (options.force !== undefined) request.setQueryParam("force", String(options.force));
    if (options.dryRun) request.setQueryParam("dryRun", "All");
    // JSON is valid YAML, so this body also serves application/apply-patch+yaml.
    request.setBody(JSON.stringify(obj));
    // requestPromise authenticates and deserializes the reply like every other object API call.
    return this.requestPromise<T>(request);
  }

  /** RFC 6902 JSON patch of one object; a `test` operation makes it a compare-and-swap. */
  async jsonPatch<T extends KubernetesObject>(
    ref: KubernetesObject,
    operations: { op: string; path: string; value?: unknown; from?: string }[],
    subresource?: string,
  ): Promise<T> {
    const objectPath = await this.objectPath(ref);
    const path = subresource ? `${objectPath}/${subresource}` : objectPath;
    const request = this.configuration.baseServer.makeRequestContext(path, HttpMethod.PATCH);
    request.setHeaderParam("Accept", "application/json");
    request.setHeaderParam("Content-Type", "application/json-patch+json");
    request.setBody(JSON.stringify(operations));
    return this.requestPromise<T>(request);
  }

  private async authenticate(request: RequestContext): Promise<void> {
    const { authMethods } = this.configuration;
    await authMethods.BearerToken?.applySecurityAuthentication(request);
    await authMethods.default?.applySecurityAuthentication(request);
  }
}
