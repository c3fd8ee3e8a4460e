// Browser tests of the Portcullis web UI, in Debian's chromium driven by
// playwright-core, against a real gateway and a real PostgreSQL (started by
// cmd/gateway's TestBrowserUI, which runs this file with node --test).
//
// The environment names the gateway: UI_URL (admin listener), WEBHOOK_URL,
// CA_FILE (the gateway's development CA), TOKEN (an operator token),
// OTHER_UI_URL (the admin listener of a second replica on the same
// database), and optionally SHOTS, a directory for the screenshots of
// docs/ui.md.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, mkdirSync } from "node:fs";
import https from "node:https";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";

const require = createRequire(import.meta.url);
const axeSource = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const { UI_URL, OTHER_UI_URL, WEBHOOK_URL, CA_FILE, TOKEN, SHOTS } = process.env;
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";

const policy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: no-bad
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["pods"]
  validations:
  - expression: "object.metadata.?labels.?bad.orValue('') != 'true'"
    message: "pods labelled bad=true are refused"
  - expression: "object.metadata.name.size() <= 253"
    message: "a pod's name has at most 253 characters"
  - expression: "object.spec.containers.size() <= 20"
    message: "a pod has at most 20 containers"
  - expression: "object.spec.containers.all(c, c.image != '')"
    message: "every container names its image"
  - expression: "!object.spec.?hostNetwork.orValue(false)"
    message: "pods do not use the host's network"
  - expression: "!object.spec.?hostPID.orValue(false)"
    message: "pods do not share the host's process IDs"
  - expression: "!object.spec.?hostIPC.orValue(false)"
    message: "pods do not share the host's IPC"
  - expression: "object.metadata.namespace != 'kube-system'"
    message: "pods stay out of kube-system"
  - expression: "object.spec.?volumes.orValue([]).all(v, !has(v.hostPath))"
    message: "pods mount no host path"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: no-bad
spec:
  policyName: no-bad
  validationActions: [Deny]
`;
// The policy is longer than the editor's height (36rem), so that every
// page showing it has an editor that scrolls (scrolls() below checks).
// The deliberate error: the expression does not compile (line 14).
const broken = policy.replace("orValue('') != 'true'", "orValue('') !=");

function review(uid, bad) {
  return JSON.stringify({
    apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview",
    request: {
      uid, kind: { group: "", version: "v1", kind: "Pod" }, resource: { group: "", version: "v1", resource: "pods" },
      namespace: "default", operation: "CREATE", userInfo: { username: "dev@example.com" },
      object: {
        apiVersion: "v1", kind: "Pod",
        metadata: { name: `web-${uid}`, namespace: "default", labels: bad ? { bad: "true" } : {} },
        spec: { containers: [{ name: "c", image: "nginx" }] },
      },
    },
  }, null, 2);
}

// The screenshots docs/ui.md shows.
const docShots = new Set(["login", "tenants", "clusters", "onboarding", "policies", "policy-error", "policy", "diff",
  "test", "decisions", "decision", "fleet", "audit"]);

let browser, context, page;
const cspViolations = [];

before(async () => {
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  context = await browser.newContext({ ignoreHTTPSErrors: true, acceptDownloads: true, viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to/.test(m.text())) cspViolations.push(m.text());
  });
  page.on("dialog", (d) => d.accept());
  if (SHOTS) mkdirSync(SHOTS, { recursive: true });
});

after(async () => {
  await browser?.close();
});

// check runs axe-core on the page (no serious or critical violation), and
// checks the page has one <h1> and no CSP violation so far.
async function check(name) {
  await page.evaluate(axeSource);
  const res = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  const bad = res.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`), [],
    `${name}: axe-core violations`);
  assert.equal(await page.locator("h1").count(), 1, `${name}: one <h1>`);
  assert.deepEqual(cspViolations, [], `${name}: CSP violations`);
  if (SHOTS && docShots.has(name)) await page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: false });
}

// scrolls asserts that the editor's text is longer than the editor, so
// that check sees a scrolling editor (axe's scrollable-region-focusable).
async function scrolls(name) {
  const s = await page.locator(".cm-scroller").evaluate((el) => ({ h: el.scrollHeight, c: el.clientHeight }));
  assert.ok(s.h > s.c + 50, `${name}: the policy does not scroll in the editor (${s.h} <= ${s.c} + 50 px)`);
}

async function download(linkName) {
  const [d] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: linkName }).click()]);
  const path = await d.path();
  return { name: d.suggestedFilename(), text: readFileSync(path, "utf8") };
}

// setEditor replaces the CodeMirror editor's text, as a paste would.
async function setEditor(text) {
  const content = page.locator(".cm-content");
  await content.click();
  await page.keyboard.press("ControlOrMeta+a");
  await page.keyboard.press("Delete");
  await page.keyboard.insertText(text);
}

function sendReview(token, body) {
  const url = new URL(`${WEBHOOK_URL}/t/shop/validate`);
  return new Promise((resolve, reject) => {
    const req = https.request(url, {
      method: "POST", ca: readFileSync(CA_FILE),
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
    }, (res) => {
      let data = "";
      res.on("data", (c) => (data += c));
      res.on("end", () => (res.statusCode === 200 ? resolve(JSON.parse(data)) : reject(new Error(`${res.statusCode} ${data}`))));
    });
    req.on("error", reject);
    req.end(body);
  });
}

// issueToken makes a token through the admin API, as the operator.
function issueToken(body) {
  const url = new URL(`${UI_URL}/api/v1/tokens`);
  return new Promise((resolve, reject) => {
    const req = https.request(url, {
      method: "POST", ca: readFileSync(CA_FILE),
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${TOKEN}` },
    }, (res) => {
      let data = "";
      res.on("data", (c) => (data += c));
      res.on("end", () => (res.statusCode === 201 ? resolve(JSON.parse(data).secret) : reject(new Error(`${res.statusCode} ${data}`))));
    });
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

// diag runs a step; on failure it adds the page's URL and text to the
// error, so that a failure in CI says what the browser showed.
function diag(fn) {
  return async () => {
    try {
      await fn();
    } catch (err) {
      const text = await page.locator("main").innerText().catch(() => "(no main)");
      err.message += `\n--- page ${page.url()}:\n${text.slice(0, 3000)}`;
      throw err;
    }
  };
}

test("the web UI end to end", async (t) => {
  let kubeToken;

  await t.test("sign in with the keyboard", diag(async () => {
    await page.goto(`${UI_URL}/ui/tenants`);
    assert.match(page.url(), /\/ui\/login$/);
    await check("login");
    await page.getByLabel("Token").fill("pcadm_not-a-token");
    await page.keyboard.press("Enter");
    await page.getByText("Sign-in failed: that token is not valid").waitFor();
    await page.getByLabel("Token").focus();
    await page.keyboard.type(TOKEN);
    await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    await page.waitForURL(/\/ui\/tenants$/);
    await page.getByText("Counting the decisions").waitFor({ state: "detached" });
    await check("tenants");
  }));

  await t.test("another replica serves the same session", diag(async () => {
    // Both listen on localhost, and cookies do not care about the port.
    await page.goto(`${OTHER_UI_URL}/ui/tenants`);
    assert.match(page.url(), /\/ui\/tenants$/, "the second replica sent the browser to sign in");
    await page.getByRole("button", { name: "Sign out" }).waitFor();
    await page.goto(`${UI_URL}/ui/tenants`);
  }));

  await t.test("create a tenant and a cluster, download its files", diag(async () => {
    await page.getByLabel("Name", { exact: true }).fill("shop");
    await page.getByLabel("Display name (optional)").fill("Shop & Co <team>");
    await page.getByRole("button", { name: "Create tenant" }).click();
    await page.getByText("Tenant shop created.").waitFor();
    await page.getByRole("cell", { name: "Shop & Co <team>" }).waitFor();
    await page.getByRole("rowheader", { name: "shop" }).getByRole("link").click();
    await page.waitForURL(/\/ui\/t\/shop\/clusters$/);
    await check("clusters-empty");
    await page.getByRole("link", { name: "Add cluster" }).click();
    await check("cluster-new");
    await page.getByLabel("Cluster name").fill("prod");
    await page.getByLabel("Bearer token").check();
    await page.getByRole("button", { name: "Create cluster" }).click();
    await page.getByRole("heading", { name: "Onboard cluster prod" }).waitFor();
    const steps = await page.locator("ol.steps").innerText();
    assert.ok(steps.indexOf("admin namespaces import --tenant shop --cluster prod") < steps.indexOf("kubectl apply -f webhooks.yaml"),
      "the namespaces import comes first");
    await check("onboarding");
    const kc = await download("Download kubeconfig.yaml");
    assert.equal(kc.name, "kubeconfig.yaml");
    kubeToken = kc.text.match(/token: (\S+)/)[1];
    const ac = await download("Download admission-configuration.yaml");
    assert.match(ac.text, /kind: AdmissionConfiguration/);
    const wh = await download("Download webhooks.yaml");
    assert.match(wh.text, /ValidatingWebhookConfiguration/);
    await page.getByRole("link", { name: "Back to the clusters" }).click();
    await page.getByRole("heading", { name: "prod" }).waitFor();
    await page.getByText("Requests (24 h)").waitFor();
    await check("clusters");
  }));

  await t.test("apply a policy with an error, fix it, diff and roll back", diag(async () => {
    await page.getByRole("navigation").getByRole("link", { name: "Policies" }).click();
    await page.getByRole("link", { name: "New policy" }).click();
    await page.locator(".cm-content").waitFor();
    await setEditor(broken);
    await page.getByRole("button", { name: "Validate" }).click();
    const err = page.locator("#check .field-errors li").first();
    await err.waitFor();
    assert.match(await err.innerText(), /line 14: documents\[0\]\.spec\.validations\[0\]\.expression: .*compilation failed/s);
    // The editor marks the line too.
    await page.locator(".cm-lint-marker-error").first().waitFor();
    assert.match(await page.locator(".cm-line").filter({ has: page.locator(".cm-lintRange-error") }).first().innerText(), /expression:/);
    await scrolls("policy-error");
    await check("policy-error");
    // The error's link moves the editor's cursor to the line.
    await page.getByRole("link", { name: "line 14" }).click();
    assert.match(await page.locator(".cm-activeLine").innerText(), /expression:/);

    await setEditor(policy);
    await page.getByRole("button", { name: "Validate" }).click();
    await page.locator("#check .ok").waitFor();
    await page.getByRole("button", { name: "Apply" }).click();
    await page.getByText("ValidatingAdmissionPolicy no-bad created").waitFor();

    await page.getByRole("navigation").getByRole("link", { name: "Policies" }).click();
    await page.getByRole("link", { name: "no-bad" }).first().waitFor();
    await check("policies");
    await page.getByRole("link", { name: "no-bad" }).first().click();
    await page.locator(".cm-content").waitFor();
    await setEditor(policy.replace("are refused", "are refused here"));
    await page.getByRole("button", { name: "Apply" }).click();
    await page.getByText(/ValidatingAdmissionPolicy no-bad configured, version \d+/).waitFor();
    assert.equal(await page.locator("table").filter({ hasText: "Versions of no-bad" }).locator("tbody tr").count(), 2);
    await scrolls("policy");
    await check("policy");

    await page.getByRole("button", { name: "Compare versions" }).click();
    await page.waitForURL(/\/diff\?/);
    assert.equal(await page.locator("tr.replace, tr.insert").filter({ hasText: "are refused here" }).count(), 1);
    await check("diff");
    await page.goBack();
    await page.locator(".cm-content").waitFor();
    await scrolls("policy-after-diff");
    await check("policy-after-diff");
    await page.getByRole("button", { name: /^Roll back to / }).click();
    await page.getByText(/rolled back to version \d+/).waitFor();
    assert.equal(await page.locator("table").filter({ hasText: "Versions of no-bad" }).locator("tbody tr").count(), 3);
    assert.doesNotMatch(await page.locator(".cm-content").innerText(), /are refused here/);
    await scrolls("history");
    await check("history");
  }));

  await t.test("test a review and read the explain trace", diag(async () => {
    await page.getByRole("navigation").getByRole("link", { name: "Test" }).click();
    await page.getByLabel("Cluster").selectOption("prod");
    await page.getByLabel("AdmissionReview (JSON or YAML)").fill(review("t1", true));
    await page.getByRole("button", { name: "Run test" }).click();
    await page.locator("#result .verdict").waitFor();
    assert.equal(await page.locator("#result .verdict").innerText(), "denied");
    const trace = await page.locator("#result .trace").first().innerText();
    assert.match(trace, /Policy no-bad, binding no-bad/);
    assert.match(trace, /pods labelled bad=true are refused/);
    await check("test");
  }));

  await t.test("decisions appear after webhook requests", diag(async () => {
    const denied = await sendReview(kubeToken, review("w1", true));
    assert.equal(denied.response.allowed, false);
    const allowed = await sendReview(kubeToken, review("w2", false));
    assert.equal(allowed.response.allowed, true);
    await page.getByRole("navigation").getByRole("link", { name: "Decisions" }).click();
    await page.waitForURL(/\/ui\/t\/shop\/decisions$/);
    const rows = page.locator("#table tbody tr");
    for (let i = 0; i < 50 && (await rows.filter({ hasText: "dev@example.com" }).count()) < 2; i++) {
      await page.waitForTimeout(200);
      await page.reload();
    }
    assert.equal(await rows.filter({ hasText: "dev@example.com" }).count(), 2);
    await page.locator("#chart canvas").first().waitFor();
    await page.locator("ol.top").waitFor();
    assert.match(await page.locator("ol.top").innerText(), /no-bad: 1/);
    await check("decisions");
    await page.getByLabel("Verdict").selectOption("denied");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/verdict=denied/);
    await page.waitForFunction(() => document.querySelectorAll("#table tbody tr").length === 1);
    await page.locator("#table tbody tr a").first().click();
    await page.getByRole("heading", { name: /^Decision / }).waitFor();
    assert.match(await page.locator("dl.facts").innerText(), /denied/);
    await check("decision");
    await page.getByRole("link", { name: "Test this request again" }).click();
    await page.getByText(/Rebuilt from decision/).waitFor();
    await check("test-from-decision");
    await page.goto(`${UI_URL}/ui/t/shop/decisions/summary?range=1h`);
    await page.locator("#chart canvas").first().waitFor();
    await check("decisions-summary");
    await page.goto(`${UI_URL}/ui/decisions`);
    await page.getByRole("rowheader", { name: "shop" }).waitFor();
    await page.locator("#chart canvas").first().waitFor();
    // The fleet's table: every tenant's decisions, filterable by tenant.
    assert.equal(await page.locator("#table tbody tr").filter({ hasText: "dev@example.com" }).count(), 2);
    await check("fleet");
    await page.getByRole("textbox", { name: "Tenant", exact: true }).fill("nobody");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/tenant=nobody/);
    await page.getByText("No decisions match.").waitFor();
    await page.goto(`${UI_URL}/ui/clusters`);
    await page.getByRole("link", { name: "shop" }).waitFor();
    await check("pick-tenant");
  }));

  await t.test("audit, then sign out", diag(async () => {
    await page.getByRole("navigation").getByRole("link", { name: "Audit" }).click();
    await page.getByRole("cell", { name: "ValidatingAdmissionPolicy" }).first().waitFor();
    await check("audit");
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("button", { name: "Sign in" }).waitFor();
    await page.goto(`${UI_URL}/ui/t/shop/clusters`);
    assert.match(page.url(), /\/ui\/login$/);
    // Signed out of the other replica too.
    await page.goto(`${OTHER_UI_URL}/ui/t/shop/clusters`);
    assert.match(page.url(), /\/ui\/login$/);
  }));
});

// focused describes the focused element: its tag, its name as a keyboard
// user would hear it (label, aria-label or text), and whether its focus is
// visible (an outline on it or, for CodeMirror's content, on its editor).
async function focused() {
  return page.evaluate(() => {
    const el = document.activeElement;
    if (!el || el === document.body) return { tag: "body", name: "", visible: false };
    const label = el.labels && el.labels[0] ? el.labels[0].textContent : "";
    const name = (el.getAttribute("aria-label") || label || el.textContent || el.value || "").trim().replace(/\s+/g, " ");
    const ring = el.closest(".cm-editor") || el;
    const s = getComputedStyle(ring);
    const r = el.getBoundingClientRect();
    const visible = r.width > 0 && r.height > 0 && s.outlineStyle !== "none" && parseFloat(s.outlineWidth) >= 2;
    return { tag: el.tagName.toLowerCase(), name, visible };
  });
}

// tabTo presses Tab until the focused element's name matches, checking on
// the way that every element reached shows its focus. Tab never gets
// stuck: the editor lets it through.
async function tabTo(name, max = 80) {
  const seen = [];
  for (let i = 0; i < max; i++) {
    await page.keyboard.press("Tab");
    let f = await focused();
    // CodeMirror marks its editor focused a moment after the focus moves.
    for (let j = 0; j < 10 && !f.visible && f.tag !== "body"; j++) {
      await page.waitForTimeout(50);
      f = await focused();
    }
    seen.push(`${f.tag} "${f.name.slice(0, 40)}"`);
    if (f.tag === "body") continue; // past the last element: the browser's own controls
    assert.ok(f.visible, `focus is not visible on ${f.tag} "${f.name}" (${page.url()})`);
    if (typeof name === "string" ? f.name === name : name.test(f.name)) return f;
  }
  assert.fail(`Tab never reached ${name}; it went through:\n${seen.join("\n")}`);
}

// Everything a newcomer does in the browser can be done with the keyboard
// alone: Tab, Enter, Space and typing; no mouse clicks.
test("the web UI with the keyboard only", async (t) => {
  await t.test("sign in", diag(async () => {
    await page.goto(`${UI_URL}/ui/login`);
    // The field has the focus from the start.
    const f = await focused();
    assert.ok(f.name === "Token" && f.visible, `focus at the start: ${JSON.stringify(f)}`);
    await page.keyboard.type(TOKEN);
    await tabTo("Sign in");
    await page.keyboard.press("Enter");
    await page.waitForURL(/\/ui\/tenants$/);
  }));

  await t.test("open a policy and validate it", diag(async () => {
    await tabTo("Policies");
    await page.keyboard.press("Enter");
    await page.waitForURL(/\/ui\/policies$/);
    await tabTo("shop");
    await page.keyboard.press("Enter");
    await page.waitForURL(/\/ui\/t\/shop\/policies$/);
    await tabTo("no-bad");
    await page.keyboard.press("Enter");
    await page.locator(".cm-content").waitFor();
    // Into the editor, type, and out again with Tab.
    const editor = await tabTo("YAML");
    assert.equal(editor.tag, "div", "the editor (CodeMirror's content) takes the focus");
    await page.keyboard.press("ControlOrMeta+End");
    await page.keyboard.type("\n# checked with the keyboard\n");
    await tabTo("Validate");
    await page.keyboard.press("Space");
    await page.locator("#check .ok").waitFor();
    assert.match(await page.locator("#check").innerText(), /Valid: applying would give/);
    // The history's two newest versions, as preselected, side by side.
    await tabTo("Compare versions");
    await page.keyboard.press("Enter");
    await page.waitForURL(/\/diff\?/);
    await page.locator("table").first().waitFor();
  }));

  await t.test("sign out", diag(async () => {
    await page.goto(`${UI_URL}/ui/t/shop/policies`);
    await tabTo("Sign out");
    await page.keyboard.press("Enter");
    await page.getByRole("button", { name: "Sign in" }).waitFor();
    await page.goto(`${UI_URL}/ui/t/shop/clusters`);
    assert.match(page.url(), /\/ui\/login$/);
  }));

  // A viewer's editor is read-only; a keyboard user still reaches it and
  // scrolls through a policy longer than it.
  await t.test("read a long policy as a viewer", diag(async () => {
    const viewer = await issueToken({ name: "ui-viewer", role: "viewer", tenant: "shop" });
    await page.goto(`${UI_URL}/ui/login`);
    // Focus the field first: typing straight after the load raced the
    // field's autofocus and, once in a few runs, sent an empty token.
    await page.getByLabel("Token").focus();
    await page.keyboard.type(viewer);
    await page.keyboard.press("Enter");
    await page.waitForURL((u) => !u.pathname.endsWith("/login"));
    await page.goto(`${UI_URL}/ui/t/shop/policies`);
    await tabTo("no-bad");
    await page.keyboard.press("Enter");
    await page.locator(".cm-content").waitFor();
    assert.equal(await page.locator(".cm-content").getAttribute("aria-readonly"), "true");
    await scrolls("policy-read-only");
    await check("policy-read-only");
    await tabTo("YAML (read-only)");
    const scroller = page.locator(".cm-scroller");
    assert.equal(await scroller.evaluate((el) => el.scrollTop), 0);
    await page.keyboard.press("ControlOrMeta+End");
    await page.waitForFunction(() => document.querySelector(".cm-scroller").scrollTop > 0);
    await tabTo("Sign out");
    await page.keyboard.press("Enter");
    await page.getByRole("button", { name: "Sign in" }).waitFor();
  }));
});
