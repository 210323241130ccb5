// claude-mem viewer: plain JS, no build step, nothing fetched from outside this server.
// Stored text only ever reaches the page through text nodes (see el()): nothing is parsed as
// HTML, so a memory holding markup shows that markup as text.
"use strict";

const $ = (id) => document.getElementById(id);
const FEED_LIMIT = 100;
const FEED_KEEP = 500; // items kept in the live list; older ones drop off the bottom
const SUMMARY_FIELDS = [["request", "Request"], ["investigated", "Investigated"], ["learned", "Learned"],
  ["completed", "Completed"], ["next_steps", "Next steps"], ["notes", "Notes"]];

const state = { project: "", seen: new Set(), source: null, mode: "feed", query: "", searchSeq: 0, routeSeq: 0, sessions: -1,
  health: null, costs: null, costsAt: 0 };
const COSTS_EVERY_MS = 10000; // the cost summary is refreshed with health events, at most this often

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false || child === "") continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// Class names built from data keep letters only, so a value can never add another class.
const token = (value) => String(value || "").toLowerCase().replace(/[^a-z]/g, "");

async function api(path, params) {
  const url = new URL(path, location.origin);
  for (const [key, value] of Object.entries(params || {})) if (value) url.searchParams.set(key, value);
  const res = await fetch(url, { headers: { Accept: "application/json" } });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(body.error || `the server answered ${res.status}`);
  return body;
}

// A person's change (a mark, a memory, an edit, a forget): a JSON body with this launch's token in
// a header, which another site's page can neither read from this page nor send without asking.
const WRITE_TOKEN = (document.querySelector('meta[name="claude-mem-write-token"]') || {}).content || "";

async function post(path, body) {
  const res = await fetch(new URL(path, location.origin), {
    method: "POST", body: JSON.stringify(body),
    headers: { Accept: "application/json", "Content-Type": "application/json", "X-Claude-Mem-Token": WRITE_TOKEN } });
  const answer = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(answer.error || `the server answered ${res.status}`);
  return answer;
}

function whenText(ms) {
  const date = new Date(ms);
  const minutes = Math.floor((Date.now() - ms) / 60000);
  if (minutes < 1) return "just now";
  if (minutes < 60) return `${minutes} min ago`;
  if (new Date().toDateString() === date.toDateString()) return date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return date.toLocaleString([], { day: "numeric", month: "short", year: "numeric", hour: "2-digit", minute: "2-digit" });
}

// A <time> that keeps its "N min ago" current (see refreshTimes).
function when(ms) {
  if (!ms) return null;
  return el("time", { datetime: new Date(ms).toISOString(), title: new Date(ms).toLocaleString(), dataset: { at: ms } }, whenText(ms));
}

function refreshTimes() {
  for (const node of document.querySelectorAll("time[data-at]")) node.textContent = whenText(Number(node.dataset.at));
}

const shortId = (id) => (id && id.length > 12 ? `${id.slice(0, 8)}…` : id || "");
const sessionHref = (id) => `#/session/${encodeURIComponent(id)}`;
const REF_PREFIX = { observation: "obs", summary: "sum", prompt: "prompt" };
// A teammate's memory (a search hit from a shared Chroma server) is named obs:12@laptop-b.
const remoteRef = (item) => `${REF_PREFIX[item.kind]}:${item.id}@${item.origin}`;
const itemHref = (item) => (item.origin ? `#/remote/${encodeURIComponent(remoteRef(item))}`
  : item.kind === "observation" ? `#/observation/${item.id}` : sessionHref(item.session_id));
const badge = (item) => el("span", { class: `badge t-${token(item.type || item.kind)}` }, item.type || item.kind);

// -- the list pane: live feed and search results ------------------------------------------------

function itemNode(item, extra) {
  const replaced = item.superseded_by && item.superseded_by.length;
  return el("li", { class: `item kind-${token(item.kind)}${replaced ? " superseded" : ""}`, dataset: { kind: item.kind, id: item.id } },
    el("a", { href: itemHref(item) },
      el("div", { class: "item-head" }, badge(item), el("span", { class: "title" }, item.title || "(untitled)")),
      item.mark ? el("p", { class: "mark" }, item.mark) : null,
      item.text ? el("p", { class: "text" }, item.text) : null,
      extra || null,
      el("div", { class: "meta" },
        el("span", { class: "proj" }, item.project), el("span", {}, when(item.created_at_epoch)),
        item.prompt_number ? el("span", {}, `turn ${item.prompt_number}`) : null,
        el("span", { class: "sid", title: item.session_id }, shortId(item.session_id)),
        item.host === "codex" ? el("span", { class: "host", title: "a Codex CLI session's memory" }, "codex") : null,
        item.origin ? el("span", { class: "origin", title: "a teammate's memory, from the shared Chroma server" },
          `from ${item.origin}`) : null)));
}

function addItem(item, live) {
  const key = `${item.kind}:${item.id}`;
  if (state.seen.has(key)) return;
  state.seen.add(key);
  const node = itemNode(item);
  const feed = $("feed");
  if (live) {
    node.classList.add("fresh");
    feed.prepend(node);
    while (feed.children.length > FEED_KEEP) feed.lastElementChild.remove();
  } else {
    feed.append(node);
  }
  markSelected();
  updateEmpty();
}

function updateEmpty() {
  const empty = $("empty");
  if (state.mode === "feed") {
    empty.hidden = $("feed").children.length > 0;
    empty.textContent = state.project ? "Nothing stored for this project yet." : "Nothing stored yet: memories appear here as they are stored.";
  }
}

function setLive(stateName, text) {
  const live = $("live");
  live.dataset.state = stateName;
  live.textContent = text;
}

function closeStream() {
  if (state.source) state.source.close();
  state.source = null;
}

function openStream(cursor) {
  closeStream();
  const url = new URL("/api/stream", location.origin);
  url.searchParams.set("after", cursor);
  if (state.project) url.searchParams.set("project", state.project);
  const source = new EventSource(url);
  source.addEventListener("open", () => setLive("live", "live"));
  source.addEventListener("error", () => {
    if (source.readyState === EventSource.CLOSED) setLive("offline", "offline: reload to retry");
    else setLive("reconnecting", "reconnecting…");
  });
  source.addEventListener("item", (event) => addItem(JSON.parse(event.data), true));
  source.addEventListener("health", (event) => renderHealth(JSON.parse(event.data)));
  state.source = source;
}

async function loadFeed() {
  closeStream();
  setLive("connecting", "connecting…");
  try {
    const { items, cursor } = await api("/api/feed", { project: state.project, limit: FEED_LIMIT });
    state.seen.clear();
    $("feed").replaceChildren();
    for (const item of items) addItem(item, false);
    updateEmpty();
    openStream(cursor);
  } catch (err) {
    setLive("offline", "offline");
    showListError(err);
  }
}

function showListError(err) {
  const empty = $("empty");
  empty.hidden = false;
  empty.textContent = `Could not load: ${err.message}`;
}

function showFeed() {
  state.mode = "feed";
  state.searchSeq += 1; // a search still running must not replace the feed
  $("list-title").textContent = "Live feed";
  $("back-to-feed").hidden = true;
  $("note").hidden = true;
  $("results").hidden = true;
  $("feed").hidden = false;
  $("q").value = "";
  updateEmpty();
}

function hitNode(hit) {
  const files = hit.files && hit.files.length ? el("p", { class: "files" }, hit.files.slice(0, 3).join(", ")) : null;
  return itemNode({ ...hit, text: hit.snippet }, files);
}

async function runSearch(query) {
  const seq = ++state.searchSeq;
  state.mode = "search";
  state.query = query;
  $("list-title").textContent = `Search: ${query}`;
  $("back-to-feed").hidden = false;
  $("feed").hidden = true;
  $("empty").hidden = true;
  const results = $("results");
  results.hidden = false;
  results.replaceChildren(el("li", { class: "loading" }, "Searching…"));
  try {
    const found = await api("/api/search", { q: query, project: state.project, limit: 30 });
    if (seq !== state.searchSeq) return;
    const note = $("note");
    note.hidden = !found.note;
    note.textContent = found.note ? `Note: ${found.note}` : "";
    results.replaceChildren(...found.hits.map(hitNode));
    results.dataset.mode = found.mode;
    if (!found.hits.length) results.append(el("li", { class: "empty" }, "No memories match."));
    markSelected();
  } catch (err) {
    if (seq === state.searchSeq) results.replaceChildren(el("li", { class: "load-error" }, `Search failed: ${err.message}`));
  }
}

// -- the header: projects and health ----------------------------------------------------------

async function loadProjects() {
  const { projects } = await api("/api/projects");
  const select = $("project");
  const options = [el("option", { value: "" }, "All projects"),
    ...projects.map((p) => el("option", { value: p.project }, `${p.project} (${p.sessions})`))];
  select.replaceChildren(...options);
  select.value = state.project;
  if (select.value !== state.project) select.value = "";
}

function stat(name, label, value, level, title) {
  return el("div", { class: `stat ${level || ""}`, dataset: { stat: name }, title },
    el("span", { class: "label" }, label), el("span", { class: "value" }, value));
}

function serviceStat(service) {
  if (!service || !service.running) return stat("service", "Memory service", "not running (starts on demand)", "");
  const parts = [`pid ${service.pid}`];
  if (service.rss_bytes) parts.push(`${Math.round(service.rss_bytes / 1048576)} MiB`);
  if (service.answering && service.index_lag !== null) parts.push(`index lag ${service.index_lag}`);
  if (!service.answering) parts.push("not answering");
  if (service.index_job) parts.push(describeJob(service.index_job));
  return stat("service", "Memory service", parts.join(" · "), service.answering ? "ok" : "warn",
    service.uptime_s ? `up ${Math.round(service.uptime_s)} s` : null);
}

// The service's indexing under way, as claude_mem/progress.py describes it: done of total, rate, time left.
function describeJob(job) {
  const done = job.done || 0, total = job.total || 0;
  let line = `${job.what}: ${done.toLocaleString()} of ${total.toLocaleString()} rows`;
  if (total) line += ` (${Math.floor((100 * done) / total)}%)`;
  if (job.rate_per_s) line += `, ${Math.round(job.rate_per_s).toLocaleString()} rows/s`;
  if (job.seconds_left !== null && job.seconds_left !== undefined) {
    const s = job.seconds_left;
    line += `, about ${s < 90 ? `${s} s` : s < 5400 ? `${Math.round(s / 60)} min` : `${(s / 3600).toFixed(1)} h`} left`;
  }
  return line;
}

// What memory put into Claude's context and what the observer spent (claude-mem stats).
function costStat() {
  const t = state.costs && state.costs.total;
  if (!t) return null;
  const inj = t.injected_tokens;
  const o = t.observer;
  const pushed = inj.digest + inj.prompt + inj.file + inj.command;
  const observerIn = o.input_tokens + o.cache_read_input_tokens + o.cache_creation_input_tokens;
  return stat("costs", "Memory in context",
    `~${pushed} tokens pushed · ~${inj.fetch} fetched · observer ${observerIn} in / ${o.output_tokens} out · ` +
    `${t.fetched_after_push} of ${t.pushed_observations} pushed observations read`, "",
    `digest ~${inj.digest} · prompt ~${inj.prompt} · file ~${inj.file} · command ~${inj.command} tokens (estimates: characters / 4)`);
}

async function loadCosts() {
  state.costsAt = Date.now();
  state.costs = await api("/api/stats", { project: state.project, limit: "1" });
  if (state.health) renderHealth(state.health);
}

function renderHealth(health) {
  state.health = health;
  if (Date.now() - state.costsAt > COSTS_EVERY_MS) loadCosts().catch(() => {});
  const q = health.queue;
  const c = health.counts;
  const workers = health.workers;
  const error = health.last_error;
  const outages = (health.outages || []).filter((o) => o.waiting);
  const skipped = health.skipped ? health.skipped.count : 0;
  const when = (ms) => new Date(ms).toLocaleString();
  const events = (n) => `${n} event${n === 1 ? "" : "s"}`;
  $("health").replaceChildren(
    stat("queue", "Queue", `${q.pending} pending · ${q.processing} processing · ${q.done} done · ${q.skipped} skipped`,
      q.skipped ? "warn" : q.pending || q.processing ? "busy" : "ok"),
    stat("workers", "Workers", workers.length ? `${workers.length} live` : "none running", workers.length ? "ok" : "",
      workers.map((w) => `pid ${w.pid} · session ${w.session_id}`).join("\n") || null),
    serviceStat(health.service),
    stat("model", "Model", outages.length
      ? `unreachable since ${when(outages[0].outage_since_epoch)}, ${events(outages.reduce((n, o) => n + o.waiting, 0))} waiting`
      : skipped ? `${events(skipped)} skipped · claude-mem retry` : "answering",
      outages.length || skipped ? "warn" : "ok",
      outages.map((o) => `session ${o.claude_session_id} · ${o.observer_error}`).join("\n") || (skipped && health.skipped.last_error) || null),
    stat("stored", "Stored", `${c.sessions} sessions · ${c.prompts} prompts · ${c.observations} observations · ${c.summaries} summaries`),
    stat("error", "Last error", error ? `${error.message}` : "none", error ? "error" : "ok",
      error ? `${error.source}${error.at_epoch ? ` · ${new Date(error.at_epoch).toLocaleString()}` : ""}` : null),
    costStat());
  if (c.sessions !== state.sessions) {
    if (state.sessions >= 0) loadProjects().catch(() => {});
    state.sessions = c.sessions;
  }
}

// -- the detail pane --------------------------------------------------------------------------

function section(title, ...content) {
  return el("section", { class: "block" }, el("h3", {}, title), ...content);
}

function list(items, cls) {
  return items && items.length ? el("ul", { class: cls || "" }, items.map((i) => el("li", {}, i))) : null;
}

function field(label, value) {
  return value === null || value === undefined || value === "" ? null : [el("dt", {}, label), el("dd", {}, value)];
}

function markEntry(m, o) {
  const older = m.old_id === o.id;
  const other = older ? m.new_id : m.old_id;
  const by = m.author === "rule" && m.rule ? `rule ${m.rule}` : m.author;
  const undo = el("button", { type: "button", class: "undo" }, "Undo");
  undo.addEventListener("click", () => changeMark({ old: m.old_id, new: m.new_id, undo: true }, undo));
  return el("li", {}, older ? (m.relation === "duplicates" ? "The same claim again in " : "Superseded by ") : "Replaces ",
    el("a", { href: `#/observation/${other}` }, `obs:${other}`), ` (${new Date(older ? m.new_epoch : m.old_epoch).toLocaleDateString()}): `,
    older ? m.new_title : m.old_title, el("span", { class: "meta" }, ` — said by ${by}${m.reason ? `: ${m.reason}` : ""} `), undo);
}

async function changeMark(body, button) {
  button.disabled = true;
  try {
    await post("/api/marks", body);
    route();
  } catch (err) {
    button.disabled = false;
    button.after(el("span", { class: "load-error" }, ` ${err.message}`));
  }
}

function markForm(o) {
  const input = el("input", { type: "text", inputmode: "numeric", placeholder: "newer obs id", "aria-label": "newer observation id", size: 12 });
  const button = el("button", { type: "submit" }, "Mark as superseded");
  const form = el("form", { class: "mark-form" }, "No longer true? Superseded by obs:", input, " ", button);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const newer = Number(String(input.value).replace(/^obs:/i, "").trim());
    if (Number.isInteger(newer) && newer > 0) changeMark({ old: o.id, new: newer }, button);
  });
  return form;
}

const TYPES = ["discovery", "decision", "change", "bugfix", "feature", "refactor"];
const fieldName = (name) => (name === "narrative" ? "text" : name);

// Edit in place: title, type, text and facts (one a line); the server keeps the version before.
function editForm(o) {
  const title = el("input", { type: "text", name: "title", value: o.title, "aria-label": "title", size: 60 });
  const type = el("select", { name: "type", "aria-label": "type" }, TYPES.map((t) => el("option", { value: t, selected: t === o.type }, t)));
  const text = el("textarea", { name: "text", rows: 6, "aria-label": "text" });
  text.value = o.narrative || "";
  const facts = el("textarea", { name: "facts", rows: 3, "aria-label": "facts, one a line" });
  facts.value = o.facts.join("\n");
  const save = el("button", { type: "submit" }, "Save");
  const cancel = el("button", { type: "button", class: "cancel" }, "Cancel");
  const form = el("form", { class: "edit-form", hidden: true },
    el("label", {}, "Title ", title), el("label", {}, "Type ", type), el("label", {}, "Text", text),
    el("label", {}, "Facts (one a line)", facts), el("div", {}, save, " ", cancel));
  cancel.addEventListener("click", () => { form.hidden = true; });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const body = { title: title.value, type: type.value, facts: facts.value.split("\n").filter((f) => f.trim()) };
    if (text.value.trim() || o.narrative) body.text = text.value;
    change(`/api/observation/${o.id}/edit`, body, save);
  });
  return form;
}

// Forget asks first, in place: nothing goes on one click.
function forgetControls(o) {
  const ask = el("button", { type: "button", class: "forget" }, "Forget…");
  const yes = el("button", { type: "button", class: "forget-yes" }, "Yes, forget it");
  const no = el("button", { type: "button", class: "cancel" }, "Keep it");
  const confirm = el("span", { class: "confirm", hidden: true },
    `Forget obs:${o.id} for good? It leaves search, the digest and every push. `, yes, " ", no);
  ask.addEventListener("click", () => { confirm.hidden = false; ask.hidden = true; });
  no.addEventListener("click", () => { confirm.hidden = true; ask.hidden = false; });
  yes.addEventListener("click", async () => {
    yes.disabled = true;
    try {
      await post(`/api/observation/${o.id}/forget`, {});
      for (const node of document.querySelectorAll(`.items li[data-kind="observation"][data-id="${o.id}"]`)) node.remove();
      state.seen.delete(`observation:${o.id}`);
      $("detail").replaceChildren(el("p", { class: "forgotten" }, `obs:${o.id} is forgotten.`));
    } catch (err) {
      yes.disabled = false;
      yes.after(el("span", { class: "load-error" }, ` ${err.message}`));
    }
  });
  return el("span", { class: "forget-controls" }, ask, confirm);
}

async function change(path, body, button) {
  button.disabled = true;
  try {
    await post(path, body);
    route();
  } catch (err) {
    button.disabled = false;
    button.after(el("span", { class: "load-error" }, ` ${err.message}`));
  }
}

function revisionsSection(o, revisions) {
  if (!revisions || !revisions.length) return null;
  const undo = el("button", { type: "button", class: "undo-edit" }, "Undo the last edit");
  undo.addEventListener("click", () => change(`/api/observation/${o.id}/edit`, { undo: true }, undo));
  return section("Earlier versions", el("ul", { class: "revisions" }, revisions.map((r) => el("li", {},
    when(r.created_at_epoch), ` edited by ${r.author}: ${r.changed.map(fieldName).join(", ")} — was `,
    el("q", {}, r.title)))), undo);
}

function renderObservation({ observation: o, session, prompt, marks, revisions }) {
  const form = editForm(o);
  const edit = el("button", { type: "button", class: "edit" }, "Edit");
  edit.addEventListener("click", () => { form.hidden = false; });
  const files = [];
  if (o.files_read.length) files.push(section("Files read", list(o.files_read, "files")));
  if (o.files_modified.length) files.push(section("Files modified", list(o.files_modified, "files")));
  return el("article", { class: "observation", dataset: { id: o.id } },
    el("header", {}, badge({ type: o.type }), el("h2", {}, o.title), o.subtitle ? el("p", { class: "subtitle" }, o.subtitle) : null,
      o.mark ? el("p", { class: "mark" }, o.mark) : null),
    el("div", { class: "actions" }, edit, " ", forgetControls(o)), form,
    el("dl", { class: "facts-meta" },
      field("Project", o.project),
      [el("dt", {}, "Session"), el("dd", {}, el("a", { href: sessionHref(o.session_id) }, o.session_id))],
      field("Turn", o.prompt_number || null),
      field("Stored", when(o.created_at_epoch)),
      field("Source", [o.source, o.model].filter(Boolean).join(" · ")),
      field("Session status", session ? session.status : null),
      field("Host", session ? hostName(session.host) : null)),
    prompt ? section("Prompt", el("blockquote", { class: "prompt" }, prompt.prompt_text)) : null,
    o.narrative ? section("Narrative", el("p", { class: "narrative" }, o.narrative)) : null,
    o.facts.length ? section("Facts", list(o.facts)) : null,
    o.concepts.length ? section("Concepts", el("p", { class: "chips" }, o.concepts.map((c) => el("span", { class: "chip" }, c)))) : null,
    ...files,
    revisionsSection(o, revisions),
    section("Still true?", marks && marks.length ? el("ul", { class: "marks" }, marks.map((m) => markEntry(m, o))) : null, markForm(o)));
}

function initRemember() {
  const text = $("remember-text");
  const said = $("remember-said");
  $("remember").addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!text.value.trim()) return;
    const button = event.target.querySelector("button");
    button.disabled = true;
    try {
      const done = await post("/api/remember", { text: text.value, type: $("remember-type").value, project: state.project || null });
      said.textContent = `${done.created ? "Remembered" : "Already remembered"} as ${done.ref} in ${done.project}`;
      said.className = "said";
      text.value = "";
    } catch (err) {
      said.textContent = err.message;
      said.className = "said load-error";
    } finally {
      button.disabled = false;
    }
  });
}

function renderRemote(r) {
  return el("article", { class: "observation remote" },
    el("header", {}, badge({ type: r.type, kind: r.kind }), el("h2", {}, r.title || "(untitled)")),
    el("dl", { class: "facts-meta" },
      field("From", `${r.origin} (installation ${r.installation})`), field("Project", r.project),
      field("Session", r.session_id), field("Turn", r.prompt_number || null), field("Stored", when(r.created_at_epoch))),
    r.text ? section("Text", el("p", { class: "narrative" }, r.text)) : null,
    r.facts && r.facts.length ? section("Facts", list(r.facts)) : null,
    r.fields ? section("Summary", el("dl", {}, SUMMARY_FIELDS.map(([key, label]) => field(label, r.fields[key])))) : null,
    r.files && r.files.length ? section("Files", list(r.files, "files")) : null,
    el("p", { class: "placeholder" }, "A teammate's memory, as their installation shared it with the Chroma server."));
}

function timelineEntry(entry) {
  if (entry.kind === "prompt") {
    return el("li", { class: "t-entry tl-prompt", dataset: { kind: "prompt", id: entry.id } },
      el("div", { class: "t-head" }, el("span", { class: "badge t-prompt" }, `turn ${entry.prompt_number}`), el("span", { class: "meta" }, when(entry.created_at_epoch))),
      el("p", { class: "prompt-text" }, entry.prompt_text));
  }
  if (entry.kind === "observation") {
    return el("li", { class: "t-entry tl-observation", dataset: { kind: "observation", id: entry.id } },
      el("a", { href: `#/observation/${entry.id}` },
        el("div", { class: "t-head" }, badge(entry), el("span", { class: "title" }, entry.title)),
        entry.mark ? el("p", { class: "mark" }, entry.mark) : null,
        entry.subtitle ? el("p", { class: "text" }, entry.subtitle) : null));
  }
  return el("li", { class: "t-entry tl-summary", dataset: { kind: "summary", id: entry.id } },
    el("div", { class: "t-head" }, el("span", { class: "badge t-summary" }, "summary"), el("span", { class: "meta" }, when(entry.created_at_epoch))),
    el("dl", {}, SUMMARY_FIELDS.map(([key, label]) => field(label, entry[key]))));
}

function injectionEntry(i) {
  const what = i.kind === "file" || i.kind === "command" ? `${i.kind} ${i.note}` : i.kind;
  return el("li", {}, when(i.created_at_epoch), ` ${what} · ~${i.tokens} tokens`,
    i.refs.length ? ` · ${i.refs.join(" ")}` : "");
}

const hostName = (host) => ({ codex: "Codex CLI", stated: "stated (remember)" }[host] || "Claude Code");

function renderSession({ session: s, entries, injections }) {
  return el("article", { class: "session" },
    el("header", {}, el("h2", {}, "Session ", el("code", {}, s.claude_session_id))),
    el("dl", { class: "facts-meta" },
      field("Project", s.project), field("Host", hostName(s.host)), field("Status", s.status),
      field("Started", when(s.started_at_epoch)),
      field("Prompts", s.prompt_counter), field("Directory", s.cwd), field("Model outage", s.observer_error
        && `unreachable since ${new Date(s.outage_since_epoch || s.observer_error_at_epoch).toLocaleString()}: ${s.observer_error}`)),
    entries.length ? el("ol", { class: "timeline" }, entries.map(timelineEntry)) : el("p", { class: "empty" }, "Nothing stored for this session yet."),
    injections && injections.length ? section("Given to Claude by memory", el("ul", { class: "injections" }, injections.map(injectionEntry))) : null);
}

async function route() {
  const seq = ++state.routeSeq;
  const detail = $("detail");
  const match = location.hash.match(/^#\/(observation|session|remote)\/(.+)$/);
  markSelected();
  if (!match) {
    detail.replaceChildren(el("p", { class: "placeholder" },
      "Pick an observation to see its details, or a prompt or summary to see its session's timeline."));
    return;
  }
  const [, what, raw] = match;
  detail.replaceChildren(el("p", { class: "loading" }, "Loading…"));
  try {
    // Decoded and encoded again, so the address can only ever name one path segment.
    const body = await api(`/api/${what}/${encodeURIComponent(decodeURIComponent(raw))}`);
    if (seq !== state.routeSeq) return;
    const render = { observation: renderObservation, session: renderSession, remote: renderRemote }[what];
    detail.replaceChildren(render(body));
    detail.scrollTop = 0;
  } catch (err) {
    if (seq === state.routeSeq) detail.replaceChildren(el("p", { class: "load-error" }, err.message));
  }
}

function markSelected() {
  const hash = location.hash;
  for (const link of document.querySelectorAll(".list-pane .item > a")) {
    link.parentElement.classList.toggle("selected", link.getAttribute("href") === hash);
  }
}

// -- start ------------------------------------------------------------------------------------

function init() {
  $("project").addEventListener("change", () => {
    state.project = $("project").value;
    loadFeed();
    loadCosts().catch(() => {});
    if (state.mode === "search") runSearch(state.query);
  });
  $("search").addEventListener("submit", (event) => {
    event.preventDefault();
    const query = $("q").value.trim();
    if (query) runSearch(query);
    else showFeed();
  });
  $("back-to-feed").addEventListener("click", showFeed);
  initRemember();
  window.addEventListener("hashchange", route);
  setInterval(refreshTimes, 30000);
  api("/api/health").then(renderHealth).catch(() => {});
  loadProjects().catch((err) => showListError(err));
  loadFeed();
  route();
}

init();
