import { html } from "htm/preact";
import { useState } from "preact/hooks";
import {
  ApiError,
  api,
  type ClusterView,
  type LogicalCloudView,
  type Me,
  type Overview,
  type QuotaRow,
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
          <td>${Object.entries(c.labels).map(([k, v]) => html`<span class="label">${k}=${v}</span> `)}</td>
        </tr>`,
      )}
    </tbody>
  </table></div>`;
}

export function OverviewPage(props: { me: Me }) {
  const [offset, setOffset] = useState(0);
  const [filter, setFilter] = useState("");
  const query = `/overview?offset=${offset}&limit=${PAGE_SIZE}${filter ? `&filter=${encodeURIComponent(filter)}` : ""}`;
  const { data, error } = useLive<Overview>(query, ["tenants", "clusters", "nodes"]);
  const total = data?.tenants.total ?? 0;
  return html`<h1>Overview</h1>
    <${Failed} error=${error} />
    <section aria-labelledby="alerts-title">
      <h2 id="alerts-title">Alerts</h2>
      ${data && data.alerts.length === 0 ? html`<p>Nothing is failing.</p>` : null}
      <ul class="alerts">
        ${data?.alerts.map((a) => html`<li><strong>${a.kind} ${a.name}</strong>: ${a.message}</li>`)}
      </ul>
    </section>
    <section aria-labelledby="tenants-title">
      <h2 id="tenants-title">Tenants ${data ? html`<span class="count">(${total})</span>` : null}</h2>
      <label for="tenant-filter">Filter by name</label>
      <input
        id="tenant-filter"
        type="search"
        value=${filter}
        onInput=${(e: InputEvent) => {
          setFilter((e.target as HTMLInputElement).value);
          setOffset(0);
        }}
      />
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
      <nav class="pager" aria-label="Tenant pages">
        <button type="button" disabled=${offset === 0} onClick=${() => setOffset(Math.max(0, offset - PAGE_SIZE))}>Previous</button>
        <span>${total === 0 ? "none" : `${offset + 1}–${Math.min(total, offset + PAGE_SIZE)} of ${total}`}</span>
        <button type="button" disabled=${offset + PAGE_SIZE >= total} onClick=${() => setOffset(offset + PAGE_SIZE)}>Next</button>
      </nav>
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

export function TenantPage(props: { name: string; me: Me }) {
  const path = `/tenants/${encodeURIComponent(props.name)}`;
  const { data, error, reload } = useLive<TenantDetail>(path, ["tenants"]);
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
    <section aria-labelledby="ns-title">
      <h2 id="ns-title">Namespaces (${data.namespaces.length})</h2>
      <div class="scroll"><table>
        <caption class="sr-only">Namespaces of ${data.name}</caption>
        <thead><tr><th scope="col">Namespace</th><th scope="col">Phase</th><th scope="col">Created</th></tr></thead>
        <tbody>${data.namespaces.map((n) => html`<tr><th scope="row">${n.name}</th><td>${n.phase}</td><td>${n.created ?? ""}</td></tr>`)}</tbody>
      </table></div>
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
    </section>`;
}

export function ClustersPage() {
  const { data, error } = useLive<{ items: ClusterView[] }>("/clusters", ["clusters"]);
  return html`<h1>Clusters</h1>
    <${Failed} error=${error} />
    ${data ? html`<${ClusterTable} clusters=${data.items} />` : null}`;
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

export function CloudsPage() {
  const { data, error } = useLive<{ items: LogicalCloudView[] }>("/clouds", ["clouds"]);
  return html`<h1>Logical clouds</h1>
    <${Failed} error=${error} />
    ${data && data.items.length === 0 ? html`<p>No logical clouds you may see.</p>` : null}
    ${
      data?.items.length
        ? html`<div class="scroll"><table>
          <caption class="sr-only">Logical clouds</caption>
          <thead><tr><th scope="col">Project namespace</th><th scope="col">Logical cloud</th><th scope="col">Level</th><th scope="col">State</th><th scope="col">Per cluster</th></tr></thead>
          <tbody>
            ${data.items.map(
              (c) => html`<tr>
                <td>${c.namespace}</td><th scope="row">${c.name}</th><td>${c.level}</td>
                <td><${Ready} ready=${c.ready} message=${c.message} /> ${c.state}</td>
                <td>${c.clusters.map((k) => html`<span class="label">${k.cluster}: ${k.state}</span> `)}</td>
              </tr>`,
            )}
          </tbody>
        </table></div>`
        : null
    }`;
}

export function RuntimesPage() {
  const { data, error, reload } = useLive<{ items: RuntimeView[]; services?: string[] }>("/runtimes", [
    "runtimes",
  ]);
  const [actionError, setActionError] = useState<string | undefined>();
  const act = async (r: RuntimeView, action: "start" | "stop") => {
    setActionError(undefined);
    try {
      await api(
        "POST",
        `/runtimes/${encodeURIComponent(r.service)}/${encodeURIComponent(r.instance)}/${action}`,
        {},
      );
      reload();
    } catch (err) {
      setActionError(err instanceof ApiError ? err.message : String(err));
    }
  };
  return html`<h1>Runtimes</h1>
    <${Failed} error=${error ?? actionError} />
    ${data && data.items.length === 0 ? html`<p>You have no runtimes.</p>` : null}
    ${
      data?.items.length
        ? html`<div class="scroll"><table>
          <caption class="sr-only">Your runtimes</caption>
          <thead><tr><th scope="col">Service</th><th scope="col">Instance</th><th scope="col">Phase</th><th scope="col">Last activity</th><th scope="col">Actions</th></tr></thead>
          <tbody>
            ${data.items.map(
              (r) => html`<tr>
                <td>${r.service}</td><th scope="row">${r.instance}</th>
                <td>${r.phase}${r.message ? ` — ${r.message}` : ""}</td><td>${r.lastActivity ?? ""}</td>
                <td>
                  <button type="button" onClick=${() => act(r, "start")} aria-label=${`Start ${r.service} ${r.instance}`}>Start</button>
                  <button type="button" onClick=${() => act(r, "stop")} aria-label=${`Stop ${r.service} ${r.instance}`}>Stop</button>
                  ${r.url && r.ready ? html`<a href=${r.url}>Open</a>` : null}
                </td>
              </tr>`,
            )}
          </tbody>
        </table></div>`
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
