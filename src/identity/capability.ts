import { AUTHORIZER } from "../access/index.js";
import { pollUntil } from "../common/index.js";
import { type Capability, type SharedContext, Slot, type Started } from "../kube/index.js";
import { TENANT_INFORMERS, type TenantInformers } from "../tenants/index.js";
import { SERVING_CERTIFICATE } from "../webhooks/index.js";
import { Authenticator } from "./authenticator.js";
import { BuiltinIdentity } from "./builtin/builtin-identity.js";
import { ProviderConfigWatch } from "./provider-config.js";
import { OidcIdentityProvider, type OidcProviderOptions } from "./providers/oidc.js";
import type { IdentityProvider } from "./providers/provider.js";
import { TenantProvisioner } from "./provisioning.js";
import { AccessServer, type AccessServerOptions } from "./server.js";

/** Who people are: what other capabilities authenticate them with, and where the identity API is. */
export interface IdentityServices {
  authenticator: Authenticator;
  /** Creates a person's tenant at first login (when told to). */
  provisioner: TenantProvisioner;
  builtinIdentity?: BuiltinIdentity;
  /** Identity REST API, OIDC issuer and kube-apiserver's access webhooks ("" when not served). */
  accessUrl: string;
  /** CA that signed the access server's certificate, for clients of the identity API. */
  accessCaPem: string;
}
export const IDENTITY = new Slot<IdentityServices>("identity");

export interface IdentityOptions {
  /** The identity REST API and kube-apiserver's token/authorization webhooks; on by default. */
  identityApi?: { host?: string; port?: number } | false;
  /** Where kube-apiserver's token and authorization webhooks reach tenantry (see TenantryOptions). */
  access?: {
    host: string;
    port: number;
    tls: { certPem: string; keyPem: string };
    caPem: string;
    /** CA of kube-apiserver's webhook client certificate: reviews are answered only over it. */
    reviewClientCaPem?: string;
  };
  /** kube-apiserver's `--api-audiences`. */
  apiAudiences?: string[];
  /** Also the CA reviews are answered over, unless `access` gives one (see TenantryOptions). */
  webhookClientCa?: string | false;
  identityProviders?: {
    /** Built-in users and tokens (default on). */
    builtin?: { tokenTtlSeconds?: number; keyRotationSeconds?: number } | false;
    oidc?: OidcProviderOptions[];
    /** More providers, e.g. Keystone. */
    extra?: IdentityProvider[];
    /** Create a user's tenant at first login when it does not exist (default true). */
    createTenants?: boolean;
  };
}

/** Identity providers, tenant provisioning at first login and the access server. */
export class IdentityCapability implements Capability {
  readonly name = "identity";
  readonly dependsOn = ["tenants", "access", "webhook certificate"];

  constructor(private readonly options: IdentityOptions = {}) {}

  async start(context: SharedContext): Promise<Started> {
    const { client, namespace, logger, lifecycle, values } = context;
    const idp = this.options.identityProviders ?? {};
    const builtinIdentity =
      idp.builtin === false
        ? undefined
        : new BuiltinIdentity({ client, namespace, logger, ...(idp.builtin ?? {}) });
    const fixedProviders = [
      ...(builtinIdentity ? [builtinIdentity] : []),
      ...(idp.oidc ?? []).map((o) => new OidcIdentityProvider(o)),
      ...(idp.extra ?? []),
    ];
    const authenticator = new Authenticator({ providers: fixedProviders });
    // Keystone and OIDC providers configured at run time (Secret tenantry-identity-providers).
    const providerConfig = new ProviderConfigWatch({
      client,
      namespace,
      authenticator,
      fixed: fixedProviders,
      logger,
    });
    await providerConfig.start();
    lifecycle.started("identity provider configuration", providerConfig);
    const informers = values.get(TENANT_INFORMERS);
    const provisioner = new TenantProvisioner({
      client,
      informers,
      createTenants: idp.createTenants ?? true,
      logger,
    });
    const accessServer = new AccessServer(
      this.accessServerOptions(context, authenticator, provisioner, builtinIdentity),
    );
    const accessUrl = this.options.identityApi === false ? "" : await accessServer.start();
    if (accessUrl) lifecycle.started("access server", accessServer);
    if (builtinIdentity && accessUrl) {
      builtinIdentity.useIssuer(accessUrl);
      await builtinIdentity.start();
      lifecycle.started("built-in identity", builtinIdentity);
    }
    logger.info({ accessUrl }, "identity and access webhooks serving");
    const certificate = values.get(SERVING_CERTIFICATE);
    if (accessUrl && !this.options.access) certificate.onRotate((next) => accessServer.rotate(next.serving));
    values.set(IDENTITY, {
      authenticator,
      provisioner,
      ...(builtinIdentity ? { builtinIdentity } : {}),
      accessUrl,
      accessCaPem: this.options.access?.caPem ?? certificate.tls.caPem,
    });
    return { servers: accessUrl ? [accessServer] : [] };
  }

  private accessServerOptions(
    { host, logger, metrics, values }: SharedContext,
    authenticator: Authenticator,
    provisioner: TenantProvisioner,
    builtinIdentity: BuiltinIdentity | undefined,
  ): AccessServerOptions {
    const { access, identityApi, apiAudiences, webhookClientCa } = this.options;
    const reviewClientCaPem = access?.reviewClientCaPem ?? (webhookClientCa || undefined);
    const authorizer = values.get(AUTHORIZER);
    const informers = values.get(TENANT_INFORMERS);
    return {
      tls: access?.tls ?? values.get(SERVING_CERTIFICATE).tls.serving,
      // kube-apiserver's webhook client certificate asks for reviews as it does for admission.
      ...(reviewClientCaPem ? { reviewClientCaPem } : {}),
      host: access?.host ?? (identityApi ? identityApi.host : undefined) ?? host,
      port: access?.port ?? (identityApi ? identityApi.port : undefined) ?? 0,
      authenticator,
      provisioner,
      ...(builtinIdentity ? { builtin: builtinIdentity } : {}),
      authorize: (spec) => authorizer.review(spec),
      ...(apiAudiences ? { apiAudiences } : {}),
      namespacesOf: (tenant) => tenantNamespaces(informers, tenant),
      logger,
      registry: metrics,
    };
  }
}

/** A tenant's namespaces from the cache, waiting up to 10 s for the first one of a tenant just created. */
async function tenantNamespaces(informers: TenantInformers, tenant: string): Promise<string[]> {
  const names = await pollUntil(
    () => {
      const found = informers.namespacesOf(tenant).map((ns) => ns.metadata!.name!);
      return found.length ? found.sort() : undefined;
    },
    { timeoutMs: 10_000, intervalMs: 200 },
  );
  return names ?? [];
}
