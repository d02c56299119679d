import { html } from "htm/preact";
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { api, closeEvents, LOGGED_OUT, type Me, rememberCsrf } from "./api.js";
import { LoginPage } from "./login.js";
import {
  CloudsPage,
  ClustersPage,
  NodesPage,
  OffloadingPage,
  OverviewPage,
  RuntimesPage,
  TenantPage,
} from "./pages.js";
import "./style.css";

const PAGES: { path: string; label: string }[] = [
  { path: "/", label: "Overview" },
  { path: "/clusters", label: "Clusters" },
  { path: "/offloading", label: "Offloading" },
  { path: "/runtimes", label: "Runtimes" },
  { path: "/nodes", label: "Nodes" },
  { path: "/clouds", label: "Logical clouds" },
];

/** Goes to a page of the dashboard without reloading it. */
export function navigate(path: string): void {
  history.pushState(null, "", path);
  dispatchEvent(new PopStateEvent("popstate"));
}

function usePath(): string {
  const [path, setPath] = useState(location.pathname);
  useEffect(() => {
    const update = () => setPath(location.pathname);
    addEventListener("popstate", update);
    return () => removeEventListener("popstate", update);
  }, []);
  return path;
}

function Page(props: { path: string; me: Me }) {
  const tenant = /^\/tenants\/([^/]+)$/.exec(props.path);
  if (tenant) return html`<${TenantPage} name=${decodeURIComponent(tenant[1]!)} me=${props.me} />`;
  switch (props.path) {
    case "/clusters":
      return html`<${ClustersPage} />`;
    case "/offloading":
      return html`<${OffloadingPage} />`;
    case "/runtimes":
      return html`<${RuntimesPage} me=${props.me} />`;
    case "/nodes":
      return html`<${NodesPage} me=${props.me} />`;
    case "/clouds":
      return html`<${CloudsPage} />`;
    default:
      return html`<${OverviewPage} me=${props.me} />`;
  }
}

function App() {
  const [me, setMe] = useState<Me | null | undefined>(undefined);
  const path = usePath();
  useEffect(() => {
    const loggedOut = () => {
      closeEvents();
      setMe(null);
    };
    addEventListener(LOGGED_OUT, loggedOut);
    return () => removeEventListener(LOGGED_OUT, loggedOut);
  }, []);
  useEffect(() => {
    api<Me>("GET", "/session").then(
      (m) => {
        rememberCsrf(m.csrf);
        setMe(m);
      },
      () => setMe(null),
    );
  }, []);
  useEffect(() => {
    const title = PAGES.find((p) => p.path === path)?.label ?? (path.startsWith("/tenants/") ? "Tenant" : "");
    document.title = me ? `${title} · tenantry` : "Log in · tenantry";
  }, [path, me]);
  if (me === undefined) return html`<main id="main"><p>Loading…</p></main>`;
  if (me === null)
    return html`<${LoginPage}
      onLogin=${(m: Me) => {
        rememberCsrf(m.csrf);
        setMe(m);
      }}
    />`;
  const logout = async () => {
    await api("POST", "/logout").catch(() => undefined);
    closeEvents();
    setMe(null);
  };
  return html`
    <a class="skip" href="#main">Skip to content</a>
    <header>
      <span class="brand">tenantry</span>
      <nav aria-label="Pages">
        <ul>
          ${PAGES.map(
            (p) => html`<li>
              <a
                href=${p.path}
                aria-current=${path === p.path ? "page" : undefined}
                onClick=${(e: MouseEvent) => {
                  e.preventDefault();
                  navigate(p.path);
                }}
                >${p.label}</a
              >
            </li>`,
          )}
        </ul>
      </nav>
      <span class="who">
        ${me.username}${me.operator ? " (operator)" : me.tenant ? ` (${me.tenant})` : ""}
        <button type="button" onClick=${logout}>Log out</button>
      </span>
    </header>
    <main id="main"><${Page} path=${path} me=${me} /></main>
  `;
}

render(html`<${App} />`, document.getElementById("app")!);
