// The bridge every widget shares (JSON-RPC over postMessage, MCP Apps 2026-01-26). brave_search_mcp.ui inlines
// it at each widget's bridge marker line and hashes the result into the widget's CSP when it serves the widget.
const bridge = (() => {
  const pending = new Map(), handlers = {}, root = document.documentElement;
  let nextId = 1, caps = {};
  const post = (msg) => window.parent.postMessage({ jsonrpc: "2.0", ...msg }, "*");
  const request = (method, params) => new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    post({ id, method, params });
  });
  const notify = (method, params) => post({ method, params });
  const applyContext = (ctx) => {
    if (ctx.theme === "light" || ctx.theme === "dark") { root.dataset.theme = ctx.theme; root.style.colorScheme = ctx.theme; }
    for (const [k, v] of Object.entries(ctx.styles?.variables ?? {})) if (k.startsWith("--") && v) root.style.setProperty(k, v);
  };
  handlers["ui/notifications/host-context-changed"] = applyContext;
  window.addEventListener("message", ({ source, data: msg }) => {
    if (source !== window.parent || msg?.jsonrpc !== "2.0") return;
    if (msg.method === undefined) {
      const p = pending.get(msg.id);
      pending.delete(msg.id);
      if (p) msg.error ? p.reject(new Error(msg.error.message ?? "host error")) : p.resolve(msg.result ?? {});
    } else if (msg.id !== undefined) {
      const ok = msg.method === "ping" || msg.method === "ui/resource-teardown";
      post(ok ? { id: msg.id, result: {} } : { id: msg.id, error: { code: -32601, message: "Method not found" } });
    } else handlers[msg.method]?.(msg.params ?? {});
  });
  const start = (name) => request("ui/initialize", {
    appInfo: { name, version: "1" }, appCapabilities: {}, protocolVersion: "2026-01-26",
  }).then((init) => {
    caps = init.hostCapabilities ?? {};
    applyContext(init.hostContext ?? {});
    notify("ui/notifications/initialized", {});
    new ResizeObserver(() => notify("ui/notifications/size-changed", {
      width: Math.ceil(root.getBoundingClientRect().width), height: Math.ceil(root.getBoundingClientRect().height),
    })).observe(document.body);
  });
  const el = (tag, props = {}, ...kids) => { const e = Object.assign(document.createElement(tag), props); e.append(...kids); return e; };
  const openLink = (url) => { if (caps.openLinks && /^https?:\/\//.test(url ?? "")) request("ui/open-link", { url }).catch(() => {}); };
  const envelope = (result) => result?.structuredContent ?? {};
  const failure = (result) => result?.isError
    ? (envelope(result).error?.message ?? result.content?.find((c) => c.type === "text")?.text ?? "The search failed.") : "";
  return { on: (m, fn) => { handlers[m] = fn; }, request, start, caps: () => caps, el, openLink, envelope, failure };
})();
