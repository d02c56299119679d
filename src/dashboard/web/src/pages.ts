import { html } from "htm/preact";
import { useState } from "preact/hooks";
import {
  type AccessGrantView,
  ApiError,
  api,
  type ClustersAnswer,
  type ClusterView,
  download,
  type LogicalCloudView,
  type Me,
  type OffloadingView,
  type Overview,
  type Paged,
  type PeeringView,
  type QuotaRow,
  type RuntimesAnswer,
  type RuntimeView,
  type TenantDetail,
  type WorkerNodeView,
} from "./api.js";
import { QuotaChart } from "./chart.js";
import { ActionForm } from "./form.js";
import { useLive } from "./live.js";

const PAGE_SIZE = 50;

function go(event: MouseEvent, path: string) {
  event.preventDefault();
  history.pushState(null, "", path);
  dispatchEvent(new PopStateEvent("popstate"));
}

function Link(props: { href: string; children: unknown }) {
  return html`<a href=${props.href} onClick=${(e: MouseEvent) => go(e, props.href)}>${props.children}</a>`;
}

function Failed(props: { error?: string }) {
  return props.error ? html`<p class="error" role="alert">${props.error}</p>` : null;
}

function Ready(props: { ready: boolean; message?: string }) {
  return props.ready
    ? html`<span class="badge good">Ready</span>`
    : html`<span class="badge bad" title=${props.message ?? ""}>Not ready</span>`;
}

function QuotaBar(props: { row: QuotaRow }) {
  const { row } = props;
  const max = row.hardValue > 0 ? row.hardValue : 1;
  return html`<div class="quota">
    <span class="quota-name">${row.resource}</span>
    <meter min="0" max=${max} high=${max * 0.8} optimum="0" value=${Math.min(row.usedValue, max)} aria-label=${`${row.resource} used`}></meter>
    <span class="quota-text">${row.used} / ${row.hard}</span>
  </div>`;
}

/** A server-side paged list's position: its filter, its page, and what the server holds. */
function usePaging(): {
  offset: number;
  filter: string;
  query: string;
  setOffset(offset: number): void;
  setFilter(filter: string): void;
} {
  const [offset, setOffset] = useState(0);
  const [filter, setFilter] = useState("");
  return {
    offset,
    filter,
    query: `offset=${offset}&limit=${PAGE_SIZE}${filter ? `&filter=${encodeURIComponent(filter)}` : ""}`,
    setOffset,
    setFilter: (f: string) => {
      setFilter(f);
      setOffset(0);
    },
  };
}

function Filter(props: { id: string; label: string; paging: ReturnType<typeof usePaging> }) {
  return html`<div class="filter">
    <label for=${props.id}>${props.label}</label>
    <input
      id=${props.id}
      type="search"
      value=${props.paging.filter}
      onInput=${(e: InputEvent) => props.paging.setFilter((e.target as HTMLInputElement).value)}
    />
  </div>`;
}

function Pager(props: { label: string; page?: Paged<unknown>; paging: ReturnType<typeof usePaging> }) {
  const { offset, setOffset } = props.paging;
  const total = props.page?.total ?? 0;
  return html`<nav class="pager" aria-label=${props.label}>
    <button type="button" disabled=${offset === 0} onClick=${() => setOffset(Math.max(0, offset - PAGE_SIZE))}>Previous</button>
    <span>${total === 0 ? "none" : `${offset + 1}–${Math.min(total, offset + PAGE_SIZE)} of ${total}`}</span>
    <button type="button" disabled=${offset + PAGE_SIZE >= total} onClick=${() => setOffset(offset + PAGE_SIZE)}>Next</button>
  </nav>`;
}

function Labels(props: { labels: Record<string, string> }) {
  return Object.entries(props.labels).map(([k, v]) => html`<span class="label">${k}=${v}</span> `);
}

function ClusterTable(props: { clusters: ClusterView[] }) {
  return html`<div class="scroll"><table>
    <caption class="sr-only">Registered clusters</caption>
    <thead><tr><th scope="col">Cluster</th><th scope="col">Health</th><th scope="col">Version</th><th scope="col">Nodes</th><th scope="col">Capacity</th><th scope="col">Labels</th></tr></thead>
    <tbody>
      ${props.clusters.map(
        (c) => html`<tr>
          <th scope="row">${c.name}</th>
          <td><${Ready} ready=${c.ready} message=${c.readyMessage} /></td>
          <td>${c.version}</td>
          <td>${c.nodes}</td>
          <td>${c.capacity}</td>
          <td><${Labels} labels=${c.labels} /></td>
        </tr>`,
      )}
    </tbody>
  </table></div>`;
}

export function OverviewPage(props: { me: Me }) {
  const paging = usePaging();
  const { data, error, reload } = useLive<Overview>(`/overview?${paging.query}`, [
    "tenants",
    "clusters",
    "nodes",
    "alerts",
  ]);
  return html`<h1>Overview</h1>
    <${Failed} error=${error} />
    <section aria-labelledby="alerts-title">
      <h2 id="alerts-title">Alerts</h2>
      ${data && data.alerts.length === 0 ? html`<p>Nothing is failing.</p>` : null}
      <ul class="alerts">
        ${data?.alerts.map(
          (a) =>
            html`<li>
              <strong>${a.kind} ${a.namespace ? `${a.namespace}/` : ""}${a.name}</strong>: ${a.message}
              ${a.rule ? html` <span class="muted">(rule ${a.rule}${a.since ? `, since ${a.since}` : ""})</span>` : null}
            </li>`,
        )}
      </ul>
    </section>
    <section aria-labelledby="tenants-title">
      <h2 id="tenants-title">Tenants ${data ? html`<span class="count">(${data.tenants.total})</span>` : null}</h2>
      <${Filter} id="tenant-filter" label="Filter by name" paging=${paging} />
      <div class="scroll"><table class="tenants">
        <caption class="sr-only">${props.me.operator ? "Every tenant" : "Your tenants"}</caption>
        <thead><tr><th scope="col">Tenant</th><th scope="col">Owners</th><th scope="col">Namespaces</th><th scope="col">State</th><th scope="col">Quota used / hard</th></tr></thead>
        <tbody>
          ${data?.tenants.items.map(
            (t) => html`<tr>
              <th scope="row"><${Link} href=${`/tenants/${encodeURIComponent(t.name)}`}>${t.name}</${Link}></th>
              <td>${t.owners}</td>
              <td>${t.namespaceCount}</td>
              <td><${Ready} ready=${t.ready} message=${t.readyMessage} />${t.cordoned ? html` <span class="badge bad">Cordoned</span>` : null}</td>
              <td>${t.quota.slice(0, 4).map((r) => html`<${QuotaBar} row=${r} />`)}</td>
            </tr>`,
          )}
        </tbody>
      </table></div>
      <${Pager} label="Tenant pages" page=${data?.tenants} paging=${paging} />
      ${
        props.me.operator
          ? html`<${ActionForm}
            id="create-tenant"
            title="Create a tenant"
            submit="Create tenant"
            path="/tenants"
            fields=${[
              { name: "name", label: "Tenant name", apiFields: ["metadata.name"] },
              {
                name: "ownerKind",
                label: "Owner kind",
                options: ["User", "Group", "ServiceAccount"],
                apiFields: ["spec.owners[0].kind"],
              },
              { name: "ownerName", label: "Owner name", apiFields: ["spec.owners"] },
              {
                name: "namespaces",
                label: "Declared namespaces",
                required: false,
                hint: "comma-separated, each created as <tenant>-<name>",
                apiFields: ["spec.namespaces"],
              },
              {
                name: "namespaceQuota",
                label: "Namespace quota",
                required: false,
                hint: "how many namespaces the owners may create",
                apiFields: ["spec.namespaceQuota"],
              },
              {
                name: "quota",
                label: "Quota",
                required: false,
                hint: "e.g. pods=20,requests.cpu=4 (tenantry's defaults otherwise)",
                apiFields: ["spec.quota"],
              },
              {
                name: "podSecurity",
                label: "Pod security",
                options: ["restricted", "baseline", "privileged"],
                apiFields: ["spec.podSecurity"],
              },
            ]}
            onDone=${reload}
          />`
          : null
      }
    </section>
    ${
      data?.clusters
        ? html`<section aria-labelledby="clusters-title">
          <h2 id="clusters-title">Clusters</h2>
          <${ClusterTable} clusters=${data.clusters} />
        </section>`
        : null
    }`;
}

function GrantTable(props: { tenant: string; grants: AccessGrantView[]; onDone(): void }) {
  // A refused revocation is shown on its grant's row, as the API stated it.
  const [refusals, setRefusals] = useState<Record<string, string>>({});
  const revoke = async (g: AccessGrantView) => {
    const key = `${g.namespace}/${g.name}`;
    setRefusals(({ [key]: _, ...rest }) => rest);
    try {
      await api(
        "DELETE",
        `/tenants/${encodeURIComponent(props.tenant)}/grants/${encodeURIComponent(g.namespace)}/${encodeURIComponent(g.name)}`,
      );
      props.onDone();
    } catch (err) {
      setRefusals((all) => ({ ...all, [key]: err instanceof ApiError ? err.message : String(err) }));
    }
  };
  return html`<div class="scroll"><table class="grants">
    <caption class="sr-only">AccessGrants in the namespaces of ${props.tenant}</caption>
    <thead><tr><th scope="col">Grant</th><th scope="col">Namespace</th><th scope="col">To</th><th scope="col">May</th><th scope="col">Expires</th><th scope="col">Revoke</th></tr></thead>
    <tbody>${props.grants.map((g) => {
      const refusal = refusals[`${g.namespace}/${g.name}`];
      return html`<tr>
        <th scope="row">${g.name}</th><td>${g.namespace}</td><td>${g.grantees.join(", ")}</td><td>${g.rules.join("; ")}</td><td>${g.expiresAt ?? "never"}</td>
        <td>
          <button type="button" onClick=${() => revoke(g)} aria-label=${`Revoke ${g.name} in ${g.namespace}`}>Revoke</button>
          ${refusal ? html`<p class="error" role="alert">${refusal}</p>` : null}
        </td>
      </tr>`;
    })}</tbody>
  </table></div>`;
}

/** The fields of the grant form: a namespace of the tenant, a grantee, one rule. */
function grantFields(namespaceChoices: string[]) {
  return [
    {
      name: "namespace",
      label: "In namespace",
      ...(namespaceChoices.length ? { options: namespaceChoices } : {}),
      apiFields: ["metadata.namespace"],
    },
    { name: "name", label: "Grant name", apiFields: ["metadata.name"] },
    {
      name: "granteeKind",
      label: "To a",
      options: ["User", "Group", "Tenant"],
      apiFields: ["spec.grantees[0].kind"],
    },
    { name: "granteeName", label: "Grantee name", apiFields: ["spec.grantees"] },
    {
      name: "apiGroups",
      label: "API groups",
      value: "core",
      hint: "comma-separated; core is the core group",
      apiFields: ["spec.rules[0].apiGroups"],
    },
    {
      name: "resources",
      label: "Resources",
      hint: "comma-separated, e.g. configmaps,pods/log",
      apiFields: ["spec.rules[0].resources", "spec.rules[0]", "spec.rules"],
    },
    {
      name: "verbs",
      label: "Verbs",
      value: "get,list,watch",
      hint: "comma-separated: get, list, watch, create, update, patch, delete",
      apiFields: ["spec.rules[0].verbs"],
    },
  ];
}

export function TenantPage(props: { name: string; me: Me }) {
  const path = `/tenants/${encodeURIComponent(props.name)}`;
  const paging = usePaging();
  const { data, error, reload } = useLive<TenantDetail>(
    `${path}?${paging.query}`,
    ["tenants", "tenant-details"],
    props.name,
  );
  if (error && !data) return html`<h1>Tenant ${props.name}</h1><${Failed} error=${error} />`;
  if (!data) return html`<h1>Tenant ${props.name}</h1><p>Loading…</p>`;
  return html`<h1>Tenant ${data.name}</h1>
    <p><${Ready} ready=${data.ready} message=${data.readyMessage} /> ${data.readyMessage ?? ""}</p>
    <section aria-labelledby="quota-title">
      <h2 id="quota-title">Quota</h2>
      <div class="quotas">${data.quota.map((r) => html`<${QuotaBar} row=${r} />`)}</div>
      <div class="charts">
        ${data.quota.map((r) =>
          data.history[r.resource]?.length
            ? html`<${QuotaChart} key=${r.resource} resource=${r.resource} points=${data.history[r.resource]} />`
            : null,
        )}
      </div>
    </section>
    <section aria-labelledby="usage-title">
      <h2 id="usage-title">Usage per user</h2>
      ${
        data.usage.length === 0
          ? html`<p>No running or pending pods of any user.</p>`
          : html`<div class="scroll"><table class="usage">
            <caption class="sr-only">What each user's pods in ${data.name} request</caption>
            <thead><tr><th scope="col">User</th><th scope="col">Pods</th><th scope="col">CPU requested</th><th scope="col">Memory requested</th></tr></thead>
            <tbody>${data.usage.map((u) => html`<tr><th scope="row">${u.user}</th><td>${u.pods}</td><td>${u.cpu}</td><td>${u.memory}</td></tr>`)}</tbody>
          </table></div>`
      }
    </section>
    <section aria-labelledby="ns-title">
      <h2 id="ns-title">Namespaces <span class="count">(${data.namespaces.total}${paging.filter ? " matching" : ""})</span></h2>
      <${Filter} id="namespace-filter" label="Filter namespaces" paging=${paging} />
      <div class="scroll"><table class="namespaces">
        <caption class="sr-only">Namespaces of ${data.name}</caption>
        <thead><tr><th scope="col">Namespace</th><th scope="col">Phase</th><th scope="col">Created</th></tr></thead>
        <tbody>${data.namespaces.items.map((n) => html`<tr><th scope="row">${n.name}</th><td>${n.phase}</td><td>${n.created ?? ""}</td></tr>`)}</tbody>
      </table></div>
      <${Pager} label="Namespace pages" page=${data.namespaces} paging=${paging} />
      <${ActionForm}
        id="create-namespace"
        title="Create a namespace"
        submit="Create namespace"
        path=${`${path}/namespaces`}
        fields=${[{ name: "name", label: "Namespace name", apiFields: ["metadata.name", "metadata.labels"] }]}
        onDone=${reload}
      />
    </section>
    <section aria-labelledby="owners-title">
      <h2 id="owners-title">Owners and users</h2>
      <ul>
        ${data.ownerList.map((o) => html`<li>${o.kind} ${o.name} (owner)</li>`)}
        ${data.users.map((u) => html`<li>User ${u.name}</li>`)}
      </ul>
      <${ActionForm}
        id="add-owner"
        title="Add an owner"
        submit="Add owner"
        path=${`${path}/owners`}
        fields=${[
          {
            name: "kind",
            label: "Kind",
            options: ["User", "Group", "ServiceAccount"],
            apiFields: ["spec.owners.kind"],
          },
          { name: "name", label: "Name", apiFields: ["spec.owners.name", "spec.owners"] },
        ]}
        onDone=${reload}
      />
    </section>
    <section aria-labelledby="grants-title">
      <h2 id="grants-title">Access grants</h2>
      ${
        data.grants.length === 0
          ? html`<p>No access granted to others.</p>`
          : html`<${GrantTable} tenant=${data.name} grants=${data.grants} onDone=${reload} />`
      }
      <${ActionForm}
        id="grant-access"
        title="Grant access"
        submit="Grant access"
        path=${`${path}/grants`}
        fields=${grantFields(data.namespaceChoices)}
        onDone=${reload}
      />
    </section>`;
}

function PeeringTable(props: { peerings: PeeringView[] }) {
  return html`<div class="scroll"><table class="peerings">
    <caption class="sr-only">Peerings of this cluster and their virtual nodes</caption>
    <thead><tr><th scope="col">Peered cluster</th><th scope="col">Health</th><th scope="col">Last heartbeat</th><th scope="col">Granted</th><th scope="col">Virtual node</th><th scope="col">Labels</th></tr></thead>
    <tbody>
      ${props.peerings.map(
        (p) => html`<tr>
          <th scope="row">${p.name}</th>
          <td><${Ready} ready=${p.ready && p.healthy} message=${p.message} /> ${p.message}</td>
          <td>${p.lastHeartbeat}</td>
          <td>${p.capacity}</td>
          <td>${
            p.virtualNode
              ? html`${p.virtualNode.name} <${Ready} ready=${p.virtualNode.ready} message=${p.virtualNode.message} /><br /><span class="muted">${p.virtualNode.allocatable}</span>`
              : "none"
          }</td>
          <td><${Labels} labels=${p.labels} /></td>
        </tr>`,
      )}
    </tbody>
  </table></div>`;
}

export function ClustersPage() {
  const { data, error } = useLive<ClustersAnswer>("/clusters", ["clusters"]);
  return html`<h1>Clusters</h1>
    <${Failed} error=${error} />
    ${
      data?.items
        ? html`<section aria-labelledby="registry-title">
          <h2 id="registry-title">Cluster registry</h2>
          <${ClusterTable} clusters=${data.items} />
        </section>`
        : null
    }
    ${
      data?.peerings
        ? html`<section aria-labelledby="peerings-title">
          <h2 id="peerings-title">Peerings and virtual nodes</h2>
          ${data.peerings.length ? html`<${PeeringTable} peerings=${data.peerings} />` : html`<p>This cluster is peered with no other.</p>`}
        </section>`
        : null
    }`;
}

export function OffloadingPage() {
  const paging = usePaging();
  const { data, error } = useLive<Paged<OffloadingView>>(`/offloading?${paging.query}`, ["offloading"]);
  return html`<h1>Offloading</h1>
    <${Failed} error=${error} />
    <${Filter} id="offloading-filter" label="Filter by namespace" paging=${paging} />
    ${data && data.total === 0 ? html`<p>No namespace you may see is offloaded.</p>` : null}
    ${
      data?.items.length
        ? html`<div class="scroll"><table class="offloading">
          <caption class="sr-only">Offloaded namespaces</caption>
          <thead><tr><th scope="col">Namespace</th><th scope="col">Tenant</th><th scope="col">Pods</th><th scope="col">Remote name</th><th scope="col">Cluster selector</th><th scope="col">Phase</th><th scope="col">Per cluster</th></tr></thead>
          <tbody>
            ${data.items.map(
              (o) => html`<tr>
                <th scope="row">${o.namespace}</th>
                <td>${o.tenant}</td>
                <td>${o.podOffloadingStrategy}</td>
                <td>${o.remoteNamespace} <span class="muted">(${o.namespaceMappingStrategy})</span></td>
                <td>${o.clusterSelector || "every peered cluster"}</td>
                <td>${o.phase}${o.message ? html`<br /><span class="muted">${o.message}</span>` : null}</td>
                <td><ul class="plain">${o.clusters.map(
                  (c) =>
                    html`<li><span class=${`badge ${c.ready ? "good" : "bad"}`}>${c.cluster}: ${c.phase}</span>${c.selected ? "" : " (no longer selected)"}${c.message && !c.ready ? html` <span class="muted">${c.message}</span>` : null}</li>`,
                )}</ul></td>
              </tr>`,
            )}
          </tbody>
        </table></div>`
        : null
    }
    <${Pager} label="Offloading pages" page=${data} paging=${paging} />`;
}

export function NodesPage(props: { me: Me }) {
  const { data, error, reload } = useLive<{
    items: WorkerNodeView[];
    providers: { name: string; flavors: string[] }[];
  }>("/nodes", ["nodes"]);
  const flavors = [...new Set(data?.providers.flatMap((p) => p.flavors) ?? [])];
  return html`<h1>Worker nodes</h1>
    <${Failed} error=${error} />
    <div class="scroll"><table>
      <caption class="sr-only">Worker nodes ${props.me.operator ? "of every tenant" : "of your tenants"}</caption>
      <thead><tr><th scope="col">Node</th><th scope="col">Tenant</th><th scope="col">Owner</th><th scope="col">Policy</th><th scope="col">Flavor</th><th scope="col">Phase</th><th scope="col">Message</th></tr></thead>
      <tbody>
        ${data?.items.map(
          (n) =>
            html`<tr><th scope="row">${n.name}</th><td>${n.tenant}</td><td>${n.owner}</td><td>${n.policy}</td><td>${n.flavor}</td><td>${n.phase}</td><td>${n.message}</td></tr>`,
        )}
      </tbody>
    </table></div>
    ${data && data.items.length === 0 ? html`<p>No worker nodes.</p>` : null}
    ${
      data
        ? html`<${ActionForm}
          id="request-node"
          title="Ask for a worker node"
          submit="Ask for node"
          path="/nodes"
          fields=${[
            { name: "name", label: "Node name", apiFields: ["metadata.name"] },
            {
              name: "provider",
              label: "Provider",
              options: data.providers.map((p) => p.name),
              apiFields: ["spec.provider"],
            },
            {
              name: "flavor",
              label: "Flavor",
              ...(flavors.length ? { options: flavors } : {}),
              apiFields: ["spec.flavor"],
            },
            {
              name: "policy",
              label: "Policy",
              options: ["private", "shared"],
              apiFields: ["spec.policy"],
            },
          ]}
          onDone=${reload}
        />`
        : null
    }`;
}

function KubeconfigButton(props: { cloud: LogicalCloudView }) {
  const { cloud } = props;
  const [error, setError] = useState<string | undefined>();
  const id = `kubeconfig-${cloud.namespace}-${cloud.name}`;
  const get = async () => {
    setError(undefined);
    try {
      await download(
        `/clouds/${encodeURIComponent(cloud.project)}/${encodeURIComponent(cloud.name)}/kubeconfig`,
        `${cloud.project}-${cloud.name}.kubeconfig`,
      );
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
    }
  };
  return html`<button type="button" onClick=${get} aria-describedby=${error ? `${id}-error` : undefined} disabled=${!cloud.project}>
      Kubeconfig<span class="sr-only"> of ${cloud.name}</span>
    </button>
    ${error ? html`<p class="error" role="alert" id=${`${id}-error`}>${error}</p>` : null}`;
}

export function CloudsPage() {
  const { data, error } = useLive<{ items: LogicalCloudView[] }>("/clouds", ["clouds"]);
  return html`<h1>Logical clouds</h1>
    <${Failed} error=${error} />
    ${data && data.items.length === 0 ? html`<p>No logical clouds you may see.</p>` : null}
    ${
      data?.items.length
        ? html`<div class="scroll"><table class="clouds">
          <caption class="sr-only">Logical clouds</caption>
          <thead><tr><th scope="col">Project</th><th scope="col">Logical cloud</th><th scope="col">Level</th><th scope="col">State</th><th scope="col">Per cluster</th><th scope="col">Download</th></tr></thead>
          <tbody>
            ${data.items.map(
              (c) => html`<tr>
                <td>${c.project || c.namespace}</td><th scope="row">${c.name}</th><td>${c.level}</td>
                <td><${Ready} ready=${c.ready} message=${c.message} /> ${c.state}</td>
                <td>${c.clusters.map((k) => html`<span class="label">${k.cluster}: ${k.state}</span> `)}</td>
                <td><${KubeconfigButton} cloud=${c} /></td>
              </tr>`,
            )}
          </tbody>
        </table></div>`
        : null
    }`;
}

/** A size in the largest binary unit that keeps it at least 1 (B, KiB, MiB, GiB). */
function bytes(size: number): string {
  const units = ["B", "KiB", "MiB", "GiB"];
  let value = size;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

type RuntimeAction = "start" | "stop" | "delete" | "backup" | "restore";
const ROW_ACTIONS = { start: "Start", stop: "Stop", delete: "Delete", backup: "Back up" } as const;

export function RuntimesPage(props: { me: Me }) {
  const { data, error, reload } = useLive<RuntimesAnswer>("/runtimes", ["runtimes"]);
  // A refused action is shown on its runtime's row, as the API stated it.
  const [refusals, setRefusals] = useState<Record<string, string>>({});
  const keyOf = (r: RuntimeView) => `${r.namespace}/${r.name}`;
  const act = async (r: RuntimeView, action: RuntimeAction, body: object = {}) => {
    if (action === "delete" && !confirm(`Delete ${r.service}/${r.instance} with its volumes?`)) return;
    setRefusals(({ [keyOf(r)]: _, ...rest }) => rest);
    try {
      await api(
        "POST",
        `/runtimes/${encodeURIComponent(r.user)}/${encodeURIComponent(r.service)}/${encodeURIComponent(r.instance)}/${action}`,
        body,
      );
      reload();
    } catch (err) {
      setRefusals((all) => ({ ...all, [keyOf(r)]: err instanceof ApiError ? err.message : String(err) }));
    }
  };
  const label = (r: RuntimeView) => `${r.service} ${r.instance}${props.me.operator ? ` of ${r.user}` : ""}`;
  return html`<h1>Runtimes</h1>
    <${Failed} error=${error} />
    ${data && data.items.length === 0 ? html`<p>${props.me.operator ? "There are no runtimes." : "You have no runtimes."}</p>` : null}
    ${
      data?.items.length
        ? html`<div class="scroll"><table class="runtimes">
          <caption class="sr-only">${props.me.operator ? "Every user's runtimes" : "Your runtimes"}</caption>
          <thead><tr>${props.me.operator ? html`<th scope="col">User</th>` : null}<th scope="col">Service</th><th scope="col">Instance</th><th scope="col">Phase</th><th scope="col">Last activity</th><th scope="col">Actions</th></tr></thead>
          <tbody>
            ${data.items.map((r) => {
              const refusal = refusals[keyOf(r)];
              const errorId = `runtime-${r.namespace}-${r.name}-error`;
              return html`<tr>
                ${props.me.operator ? html`<td>${r.user}</td>` : null}
                <td>${r.service}</td><th scope="row">${r.instance}</th>
                <td>${r.phase}${r.message ? ` — ${r.message}` : ""}</td><td>${r.lastActivity ?? ""}</td>
                <td class="actions">
                  ${Object.entries(ROW_ACTIONS).map(
                    ([action, text]) =>
                      html`<button type="button" onClick=${() => act(r, action as RuntimeAction)} aria-label=${`${text} ${label(r)}`} aria-describedby=${refusal ? errorId : undefined}>${text}</button> `,
                  )}
                  ${r.url && r.ready ? html`<a href=${r.url}>Open</a>` : null}
                  ${refusal ? html`<p class="error" role="alert" id=${errorId}>${refusal}</p>` : null}
                </td>
              </tr>`;
            })}
          </tbody>
        </table></div>`
        : null
    }
    ${
      data?.items.some((r) => data.backups[keyOf(r)]?.length)
        ? html`<section aria-labelledby="backups-title">
          <h2 id="backups-title">Backups</h2>
          <div class="scroll"><table class="backups">
            <caption class="sr-only">Backups of the runtimes above, newest first</caption>
            <thead><tr><th scope="col">Runtime</th><th scope="col">Backup</th><th scope="col">Trigger</th><th scope="col">Phase</th><th scope="col">Size</th><th scope="col">Made</th><th scope="col">Restore</th></tr></thead>
            <tbody>
              ${data.items.flatMap((r) =>
                (data.backups[keyOf(r)] ?? []).map(
                  (b) => html`<tr>
                    <td>${label(r)}</td><th scope="row">${b.name}</th><td>${b.trigger}</td>
                    <td>${b.phase}${b.message ? html`<br /><span class="muted">${b.message}</span>` : null}</td>
                    <td>${bytes(b.size)}</td><td>${b.created}</td>
                    <td>${
                      b.phase === "Completed"
                        ? html`<button type="button" onClick=${() => act(r, "restore", { backup: b.name })} aria-label=${`Restore ${b.name}`}>Restore</button>`
                        : null
                    }${b.restore ? html`<br /><span class="muted restore">last restore: ${b.restore.phase}${b.restore.message ? ` — ${b.restore.message}` : ""}</span>` : null}</td>
                  </tr>`,
                ),
              )}
            </tbody>
          </table></div>
        </section>`
        : null
    }
    <${ActionForm}
      id="start-runtime"
      title="Start a runtime"
      submit="Start runtime"
      path="/runtimes"
      fields=${[
        {
          name: "service",
          label: "Service",
          apiFields: ["service"],
          ...(data?.services?.length ? { options: data.services } : {}),
        },
        { name: "instance", label: "Instance", apiFields: ["instance"] },
      ]}
      body=${(v: Record<string, string>) => v}
      onDone=${reload}
    />`;
}
