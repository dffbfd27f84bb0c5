// himga view: the page. Plain JS, no build step, nothing fetched but this viewer's own
// JSON (served mode) or nothing at all (the single-file mode embeds it). Every text of a
// run goes into the page as a text node, never as HTML.
"use strict";
(() => {
  const boot = JSON.parse(document.getElementById("himga-boot").textContent);
  const PAGE = boot.page;
  const main = document.getElementById("main");
  const memo = new Map();

  // ---- data: the same documents in both modes --------------------------------------
  function once(key, make) {
    if (!memo.has(key)) memo.set(key, make());
    return memo.get(key);
  }
  function embedded(id) {
    return JSON.parse(document.getElementById(id).textContent);
  }
  async function fetched(path) {
    const response = await fetch(path);
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return response.json();
  }
  const served = boot.mode === "served";
  const api = {
    runs: () => once("runs", () => (served ? fetched("api/runs.json") : embedded("himga-runs"))),
    // A served leaderboard comes before any run's results are read: an entry's
    // measurements (latency, context size) come with its measured entry.
    entry: (i) => once(`entry/${i}`, () => fetched(`api/entry/${i}.json`)),
    // A page of a run's questions: the server filters and pages them; the single file
    // does the same here, over its embedded index.
    questions: (i, filters) => (served ? fetched(route(`api/questions/${i}.json`, filters).slice(1)) : questionPage(i, filters)),
    index: (i) =>
      once(`index/${i}`, () => (served ? fetched(`api/index/${i}.json`) : embedded(`himga-index-${i}`))),
    question: async (i, n) => {
      if (served) return fetched(`api/question/${i}/${n}.json`);
      // The single file keeps the records in chunks: showing one parses its chunk alone.
      const chunk = Math.floor(n / boot.chunk);
      const element = `himga-details-${i}-${chunk}`;
      if (!Number.isInteger(n) || n < 0 || !document.getElementById(element)) throw new Error(`run ${i} has no question ${n}`);
      const records = await once(`details/${i}/${chunk}`, () => embedded(element));
      if (!(n % boot.chunk in records)) throw new Error(`run ${i} has no question ${n}`);
      return records[n % boot.chunk];
    },
  };

  // ---- DOM helpers --------------------------------------------------------------------
  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  const fmt = (v, digits = 3) => (v === null || v === undefined ? "–" : Number(v).toFixed(digits));
  // A metric cell, with its 95% interval where the run has one (the judge's Wilson interval).
  const metric = (run, block, key) => {
    const bounds = ((run.intervals || {})[block] || {})[key];
    const value = fmt(run.blocks[block][key]);
    return bounds ? `${value} [${fmt(bounds[0])}, ${fmt(bounds[1])}]` : value;
  };
  const ms = (s) => (s === null || s === undefined ? "–" : `${(s * 1000).toFixed(1)} ms`);
  const count = (v) => (v === null || v === undefined ? "?" : Number(v).toLocaleString("en"));
  const key = (index, n) => `${index.sample[n]}\t${index.question_id[n]}`;
  function link(href, ...children) {
    return h("a", { href }, ...children);
  }
  function route(path, params) {
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) if (v !== "" && v !== null && v !== undefined) query.set(k, v);
    const text = query.toString();
    return `#${path}${text ? `?${text}` : ""}`;
  }
  function pager(total, page, go) {
    const pages = Math.max(1, Math.ceil(total / PAGE));
    return h(
      "p",
      { class: "pager" },
      h("button", { onclick: () => go(page - 1), disabled: page <= 0, "data-test": "prev" }, "‹ previous"),
      ` page ${page + 1} of ${pages} (${count(total)} questions) `,
      h("button", { onclick: () => go(page + 1), disabled: page >= pages - 1, "data-test": "next" }, "next ›"),
    );
  }

  // ---- pages --------------------------------------------------------------------------
  // An entry's measurements, as cells; "…" until its results are read (served mode), and
  // each cell filled in then.
  function measures(run) {
    const cells = [
      h("td", { class: "num", "data-measure": "p50" }, run.measured ? ms(run.latency_p50_s) : "…"),
      h("td", { class: "num", "data-measure": "p95" }, run.measured ? ms(run.latency_p95_s) : "…"),
      h("td", { class: "num", "data-measure": "chars" }, run.measured ? fmt(run.context_chars, 0) : "…"),
    ];
    if (!run.measured)
      api.entry(run.id).then(
        (entry) => cells.forEach((cell, j) => (cell.textContent = [ms(entry.latency_p50_s), ms(entry.latency_p95_s), fmt(entry.context_chars, 0)][j])),
        (error) => cells.forEach((cell) => ((cell.textContent = "!"), cell.setAttribute("title", String(error.message || error)))),
      );
    return cells;
  }

  async function leaderboard() {
    const board = await api.runs();
    const runs = board.runs;
    document.title = runs.map((run) => `${run.label} on ${run.dataset}`).join(", ");
    const head = ["run", "benchmark", "memory", "status", "questions"];
    const tail = ["retrieval p50", "p95", "ctx chars", "judge model", "model calls", "tokens in / out", "wall", "started"];
    const rows = runs.map((run) =>
      h(
        "tr",
        { "data-run": run.id },
        h("td", { title: run.path }, link(route(`/run/${run.id}`), run.path.split(/[\\/]/).pop())),
        h("td", {}, run.dataset),
        h("td", { title: JSON.stringify(run.arguments) }, run.arm && run.arm !== "memory" ? `${run.arm}: ${run.label}` : run.label),
        h("td", { class: `status ${run.status}` }, run.status),
        h("td", { class: "num" }, `${count(run.done)}/${count(run.total)}`),
        board.columns.map((c) => h("td", { class: "num" }, metric(run, "overall", c.key))),
        measures(run),
        h("td", {}, run.judge_model || "–"),
        h("td", { class: "num" }, run.cost ? count(run.cost.calls) : "–"),
        h("td", { class: "num" }, run.cost ? `${count(run.cost.input_tokens)} / ${count(run.cost.output_tokens)}` : "–"),
        h("td", { class: "num" }, run.wall_time_s === null ? "–" : `${fmt(run.wall_time_s, 1)} s`),
        h("td", {}, run.date || "–"),
      ),
    );
    const categories = [...new Set(runs.flatMap((run) => Object.keys(run.blocks).filter((b) => b !== "overall")))];
    const perCategory = categories.flatMap((category) =>
      runs
        .filter((run) => category in run.blocks)
        .map((run) =>
          h(
            "tr",
            {},
            h("td", {}, link(route(`/run/${run.id}`, { category }), category)),
            h("td", {}, run.label),
            h("td", { class: "num" }, count(run.blocks[category].questions)),
            board.columns.map((c) => h("td", { class: "num" }, metric(run, category, c.key))),
          ),
        ),
    );
    const children = [
      h("h1", {}, "Leaderboard"),
      h(
        "table",
        { id: "leaderboard" },
        h("thead", {}, h("tr", {}, head.map((t) => h("th", {}, t)), board.columns.map((c) => h("th", {}, c.title)), tail.map((t) => h("th", {}, t)))),
        h("tbody", {}, rows),
      ),
      h("h2", {}, "Per category"),
      h(
        "table",
        { id: "categories" },
        h("thead", {}, h("tr", {}, ["category", "run", "n"].map((t) => h("th", {}, t)), board.columns.map((c) => h("th", {}, c.title)))),
        h("tbody", {}, perCategory),
      ),
      h("h2", {}, "Recall@k"),
      curves(board),
    ];
    if (runs.length >= 2) {
      const pick = (name, chosen) =>
        h("select", { id: name }, runs.map((run) => h("option", { value: run.id, selected: run.id === chosen }, `${run.id}: ${run.label} (${run.path})`)));
      const a = pick("diff-a", 0);
      const b = pick("diff-b", 1);
      children.push(
        h("h2", {}, "Diff two runs"),
        h("p", {}, "A ", a, " B ", b, " ", h("button", { id: "diff-go", onclick: () => (location.hash = route(`/diff/${a.value}/${b.value}`)) }, "questions gained and lost")),
      );
    }
    return children;
  }

  function curves(board) {
    const NS = "http://www.w3.org/2000/svg";
    const svg = (tag, attrs, ...children) => {
      const node = document.createElementNS(NS, tag);
      for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
      for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
      return node;
    };
    const drawn = board.runs.filter((run) => run.recall.some((v) => v !== null));
    if (!drawn.length) return h("p", { class: "muted" }, "No ranked retrieval in these runs (the memory is not searchable).");
    const [W, H, L, B] = [560, 260, 40, 30];
    const x = (i) => L + (i * (W - L - 150)) / Math.max(1, board.ks.length - 1);
    const y = (v) => H - B - v * (H - B - 10);
    const colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];
    const graph = svg("svg", { id: "recall-curves", width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img" });
    for (const v of [0, 0.25, 0.5, 0.75, 1]) {
      graph.append(svg("line", { x1: L, x2: x(board.ks.length - 1), y1: y(v), y2: y(v), class: "grid" }));
      graph.append(svg("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end" }, v.toFixed(2)));
    }
    board.ks.forEach((k, i) => graph.append(svg("text", { x: x(i), y: H - 10, "text-anchor": "middle" }, `k=${k}`)));
    drawn.forEach((run, r) => {
      const colour = colours[r % colours.length];
      const points = run.recall.map((v, i) => (v === null ? null : `${x(i)},${y(v)}`)).filter(Boolean);
      graph.append(svg("polyline", { points: points.join(" "), fill: "none", stroke: colour, "stroke-width": 2, "data-run": run.id }));
      graph.append(svg("text", { x: W - 140, y: 20 + 16 * r, fill: colour }, `${run.id}: ${run.label}`.slice(0, 24)));
    });
    return graph;
  }

  // Verdicts of every judged run by question, to find where judges disagree.
  async function verdicts() {
    const board = await api.runs();
    const judged = board.runs.filter((run) => run.score === "judge");
    const byKey = new Map();
    for (const run of judged) {
      const index = await api.index(run.id);
      index.outcome.forEach((o, n) => {
        const name = index.outcomes[o];
        if (name !== "correct" && name !== "wrong") return;
        const k = key(index, n);
        if (!byKey.has(k)) byKey.set(k, new Set());
        byKey.get(k).add(name);
      });
    }
    return byKey;
  }

  // The single file's page of questions, as the server's /api/questions (ViewData.questions).
  async function questionPage(i, filters) {
    const index = await api.index(i);
    const split = filters.disagree ? await verdicts() : null;
    const chosen = [];
    for (let n = 0; n < index.sample.length; n++) {
      if (filters.category && index.categories[index.category[n]] !== filters.category) continue;
      if (filters.outcome && index.outcomes[index.outcome[n]] !== filters.outcome) continue;
      if (split && !((split.get(key(index, n)) || new Set()).size > 1)) continue;
      chosen.push(n);
    }
    const rows = chosen
      .slice(filters.page * PAGE, (filters.page + 1) * PAGE)
      .map((n) => [n, index.sample[n], index.question_id[n], index.categories[index.category[n]], index.text[n], index.outcomes[index.outcome[n]], index.score[n]]);
    return { run: i, categories: index.categories, outcomes: index.outcomes, score_metric: index.score_metric, total: chosen.length, page: filters.page, rows };
  }

  async function questionList(i, params) {
    const board = await api.runs();
    const run = board.runs[i];
    if (!run) throw new Error(`no run ${i}`);
    const category = params.get("category") || "";
    const outcomeName = params.get("outcome") || "";
    const disagree = params.get("disagree") === "1";
    const page = Number(params.get("page") || 0);
    const listed = await api.questions(i, { category, outcome: outcomeName, disagree: disagree ? 1 : "", page });
    const go = (changes) => (location.hash = route(`/run/${i}`, { category, outcome: outcomeName, disagree: disagree ? 1 : "", page: 0, ...changes }));
    const select = (id, value, options, name) =>
      h("select", { id, onchange: (e) => go({ [name]: e.target.value }) }, h("option", { value: "" }, "all"), options.map((o) => h("option", { value: o, selected: o === value }, o)));
    return [
      h("p", {}, link("#/", "‹ leaderboard")),
      h("h1", {}, `${run.label} on ${run.dataset}`),
      h("p", { class: "muted" }, `${run.path} · ${run.status} · ${count(run.done)}/${count(run.total)} questions · score: ${listed.score_metric || "none"}`),
      h(
        "p",
        { class: "filters" },
        "category ", select("filter-category", category, listed.categories, "category"),
        " outcome ", select("filter-outcome", outcomeName, listed.outcomes, "outcome"),
        " ",
        h("label", {}, h("input", { type: "checkbox", id: "filter-disagree", checked: disagree, onchange: (e) => go({ disagree: e.target.checked ? 1 : "" }) }), " judges disagree (across the runs shown)"),
      ),
      pager(listed.total, page, (p) => go({ page: p })),
      h(
        "table",
        { id: "questions" },
        h("thead", {}, h("tr", {}, ["#", "sample", "question id", "category", "question", "outcome", "score"].map((t) => h("th", {}, t)))),
        h(
          "tbody",
          {},
          listed.rows.map(([n, sample, questionId, categoryName, text, outcome, score]) =>
            h(
              "tr",
              {},
              h("td", { class: "num" }, n),
              h("td", {}, sample),
              h("td", {}, questionId),
              h("td", {}, categoryName),
              h("td", {}, link(route(`/run/${i}/q/${n}`), text)),
              h("td", { class: `outcome ${outcome}` }, outcome),
              h("td", { class: "num" }, fmt(score)),
            ),
          ),
        ),
      ),
    ];
  }

  function marked(context, spans) {
    const pre = h("pre", { id: "context" });
    let at = 0;
    for (const [start, end] of spans) {
      pre.append(context.slice(at, start), h("mark", {}, context.slice(start, end)));
      at = end;
    }
    pre.append(context.slice(at));
    return pre;
  }

  async function question(i, n) {
    const board = await api.runs();
    const record = await api.question(i, n);
    const run = board.runs[i];
    const evidence = new Set(record.evidence_turns);
    const field = (name, ...value) => h("tr", {}, h("th", {}, name), h("td", {}, ...value));
    const errors = [];
    if (record.memory_error) {
      const e = record.memory_error;
      errors.push(h("p", { class: "error" }, `memory error in ${e.method}: ${e.type}: ${e.message}`));
    }
    if (record.error) errors.push(h("p", { class: "error" }, `LLM error: ${record.error}`));
    if (record.judge_error) errors.push(h("p", { class: "error" }, `judge error: ${record.judge_error}`));
    if (record.traceback) errors.push(h("pre", { class: "error" }, record.traceback));
    // The same question in the other runs, and the diff with each.
    const others = [];
    for (const other of board.runs) {
      if (other.id === i) continue;
      const index = await api.index(other.id);
      let m = -1;
      for (let j = 0; j < index.sample.length; j++) if (index.sample[j] === record.sample_id && index.question_id[j] === record.question_id) { m = j; break; }
      others.push(h("li", {}, m >= 0 ? link(route(`/run/${other.id}/q/${m}`), `${other.label}: ${index.outcomes[index.outcome[m]]}`) : `${other.label}: not in this run`, " · ", link(route(`/diff/${i}/${other.id}`), "diff")));
    }
    return [
      h("p", {}, link("#/", "‹ leaderboard"), " · ", link(route(`/run/${i}`), `‹ ${run.label}`), " · ", n > 0 ? link(route(`/run/${i}/q/${n - 1}`), "previous") : null, " ", n + 1 < run.done ? link(route(`/run/${i}/q/${n + 1}`), "next") : null),
      h("h1", { id: "question-text" }, record.question),
      h(
        "table",
        { id: "question-fields", class: "fields" },
        field("run", `${run.label} (${run.path})`),
        field("sample / question", `${record.sample_id} / ${record.question_id}`),
        field("category", record.category),
        field("gold answer", h("span", { id: "gold" }, record.answer)),
        field("answer", h("span", { id: "prediction" }, record.prediction === null ? "– (no answer: no LLM, or it failed)" : record.prediction)),
        field("outcome", h("span", { id: "outcome", class: `outcome ${record.outcome}` }, record.outcome)),
        field("judge", record.judge === null ? "–" : `${fmt(record.judge)} (${run.judge_model || "judge"})`),
        field("retrieval latency", ms(record.retrieval_latency_s)),
        field("metrics", Object.entries(record.metrics).map(([k, v]) => `${k} ${fmt(v)}`).join(" · ") || "–"),
      ),
      errors,
      h("h2", {}, "Evidence turns"),
      h("ul", { id: "evidence" }, record.evidence_turns.map((t, j) => h("li", {}, h("b", {}, t), ": ", record.evidence_texts[j] === null ? "(not in the sample)" : record.evidence_texts[j]))),
      h("h2", {}, `Retrieved context (${record.evidence_spans.length} evidence passage(s) marked)`),
      marked(record.context, record.evidence_spans),
      record.ranked_turn_ids
        ? [h("h2", {}, "Ranking (evidence turns in bold)"), h("ol", { id: "ranking" }, record.ranked_turn_ids.map((t) => h("li", { class: evidence.has(t) ? "hit" : null }, t === null ? "(no turn)" : t)))]
        : null,
      others.length ? [h("h2", {}, "In the other runs"), h("ul", { id: "others" }, others)] : null,
    ];
  }

  const DIFF_COLUMNS = [
    ["key", "question"],
    ["category", "category"],
    ["a", "A"],
    ["b", "B"],
    ["delta", "Δ score"],
  ];

  async function diff(a, b, params) {
    const board = await api.runs();
    const [ra, rb] = [board.runs[a], board.runs[b]];
    if (!ra || !rb) throw new Error(`no runs ${a} and ${b}`);
    const [ia, ib] = [await api.index(a), await api.index(b)];
    const show = params.get("show") || "changed";
    const sort = params.get("sort") || "delta";
    const descending = params.get("dir") !== "asc";
    const page = Number(params.get("page") || 0);
    const inA = new Map();
    for (let n = 0; n < ia.sample.length; n++) inA.set(key(ia, n), n);
    const rows = [];
    let gained = 0;
    let lost = 0;
    for (let m = 0; m < ib.sample.length; m++) {
      const n = inA.get(key(ib, m));
      if (n === undefined) continue;
      const [oa, ob] = [ia.outcomes[ia.outcome[n]], ib.outcomes[ib.outcome[m]]];
      const change = oa !== "correct" && ob === "correct" ? "gained" : oa === "correct" && ob !== "correct" ? "lost" : "same";
      if (change === "gained") gained++;
      if (change === "lost") lost++;
      if (show === "changed" ? change === "same" : show !== "all" && change !== show) continue;
      const [sa, sb] = [ia.score[n], ib.score[m]];
      rows.push({ n, m, change, key: ib.text[m], category: ib.categories[ib.category[m]], a: oa, b: ob, delta: sa === null || sb === null ? null : sb - sa });
    }
    rows.sort((x, y) => {
      const [u, v] = [x[sort], y[sort]];
      const order = u === v ? 0 : u === null ? 1 : v === null ? -1 : u < v ? -1 : 1;
      return descending ? -order : order;
    });
    const go = (changes) => (location.hash = route(`/diff/${a}/${b}`, { show, sort, dir: descending ? "desc" : "asc", page: 0, ...changes }));
    const header = DIFF_COLUMNS.map(([name, title]) =>
      h("th", { class: "sortable", "data-sort": name, onclick: () => go({ sort: name, dir: sort === name && descending ? "asc" : "desc" }) }, title, sort === name ? (descending ? " ▼" : " ▲") : ""),
    );
    return [
      h("p", {}, link("#/", "‹ leaderboard")),
      h("h1", {}, "Diff"),
      h("p", {}, "A: ", link(route(`/run/${a}`), `${ra.label} (${ra.path})`), " · B: ", link(route(`/run/${b}`), `${rb.label} (${rb.path})`)),
      h("p", { id: "diff-summary" }, `B gained ${gained} and lost ${lost} questions against A (${ia.score_metric === ib.score_metric ? `score: ${ib.score_metric}` : "scores differ in kind"}).`),
      h(
        "p",
        { class: "filters" },
        "show ",
        h("select", { id: "diff-show", onchange: (e) => go({ show: e.target.value }) }, ["changed", "gained", "lost", "all"].map((o) => h("option", { value: o, selected: o === show }, o))),
      ),
      pager(rows.length, page, (p) => go({ page: p })),
      h(
        "table",
        { id: "diff" },
        h("thead", {}, h("tr", {}, header, h("th", {}, "change"))),
        h(
          "tbody",
          {},
          rows.slice(page * PAGE, (page + 1) * PAGE).map((row) =>
            h(
              "tr",
              { class: row.change },
              h("td", {}, link(route(`/run/${b}/q/${row.m}`), row.key)),
              h("td", {}, row.category),
              h("td", { class: `outcome ${row.a}` }, link(route(`/run/${a}/q/${row.n}`), row.a)),
              h("td", { class: `outcome ${row.b}` }, link(route(`/run/${b}/q/${row.m}`), row.b)),
              h("td", { class: "num" }, row.delta === null ? "–" : (row.delta > 0 ? "+" : "") + row.delta.toFixed(3)),
              h("td", {}, row.change),
            ),
          ),
        ),
      ),
    ];
  }

  // ---- routing ------------------------------------------------------------------------
  async function render() {
    const [path, query] = location.hash.slice(1).split("?");
    const params = new URLSearchParams(query || "");
    const parts = (path || "/").split("/").filter(Boolean);
    let page;
    try {
      if (parts[0] === "run" && parts[2] === "q") page = await question(Number(parts[1]), Number(parts[3]));
      else if (parts[0] === "run") page = await questionList(Number(parts[1]), params);
      else if (parts[0] === "diff") page = await diff(Number(parts[1]), Number(parts[2]), params);
      else page = await leaderboard();
    } catch (error) {
      page = [h("p", {}, link("#/", "‹ leaderboard")), h("p", { class: "error", id: "failure" }, String(error.message || error))];
    }
    main.replaceChildren(...[page].flat(Infinity).filter((x) => x !== null && x !== undefined));
    main.setAttribute("data-ready", location.hash || "#/");
    window.scrollTo(0, 0);
  }
  window.addEventListener("hashchange", render);
  render();
})();
