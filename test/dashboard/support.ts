import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { AxeBuilder } from "@axe-core/playwright";
import { type Browser, chromium, type Page } from "playwright-core";
import { ensureChromium } from "../../scripts/chromium.js";
import { testEnvironment } from "../support/clusters.js";

export function dashboardUrl(): string {
  const url = testEnvironment().tenantry.dashboardUrl;
  if (!url) throw new Error("the test environment has no dashboard (tenantry started without it)");
  return url;
}

/** Debian's Chromium (installed when missing), driven by playwright-core. */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: await ensureChromium(), args: ["--no-sandbox"] });
}

/** A fresh browser context (its own cookies), logged in to the dashboard as `username`. */
export async function loggedIn(browser: Browser, username: string, password: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(dashboardUrl());
  await page.getByLabel("User name").fill(username);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("heading", { name: "Overview", level: 1 }).waitFor();
  return page;
}

/** Goes to a page of the dashboard through its navigation, as a person would. */
export async function open(page: Page, label: string, heading: string): Promise<void> {
  await page
    .getByRole("navigation", { name: "Pages" })
    .getByRole("link", { name: label, exact: true })
    .click();
  await page.getByRole("heading", { name: heading, level: 1 }).waitFor();
}

/** axe-core on the page as it is: no serious or critical violation. */
export async function assertAccessible(page: Page, what: string): Promise<void> {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(
    bad.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`),
    [],
    `accessibility violations on ${what}`,
  );
}

/** TENANTRY_DASHBOARD_SCREENSHOTS=<folder> saves the main pages there as dashboard-<name>.png (docs/ for the README). */
export async function shot(page: Page, name: string): Promise<void> {
  const folder = process.env.TENANTRY_DASHBOARD_SCREENSHOTS;
  if (!folder) return;
  mkdirSync(folder, { recursive: true });
  await page.screenshot({ path: join(folder, `dashboard-${name}.png`), fullPage: true });
}
