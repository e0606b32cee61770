/* convgraph's forest view: draws the conversation trees embedded in the page.
 *
 * Everything comes from the JSON block #convgraph-data; nothing is fetched.
 * Text from the database reaches the page only through textContent and
 * setAttribute, never as markup, so no prompt or response can run script.
 * Only the expanded part of a tree is laid out (a collapsed subtree costs
 * one "+N hidden" label), and of that only what lies near the visible part of
 * the canvas is in the DOM, so an expanded 5,000-node conversation costs a
 * screenful. Every walk over a tree is a loop over an explicit queue or stack.
 * The roots of one conversation are alternatives at its start (a first turn
 * regenerated or edited): they hang from one drawn start, and a node's
 * alternatives (convgraph.model.tree.siblings) are the other children of its
 * parent, or the other roots. A node's run (its tool calls and their results,
 * code and its output, reasoning folded) is shown in the panel from its parts.
 * A coding agent's subagent (a sidechain: its nodes' parts carry `sidechain`)
 * opens folded into one dashed box under its Task call's node, named by the
 * agent's id and its node count; a click on it opens it.
 */
(function () {
  "use strict";

  var SVG_NS = "http://www.w3.org/2000/svg";
  var PALETTE = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2",
    "#edc948", "#ff9da7", "#9c755f", "#86bcb6", "#d37295", "#8cd17d",
  ];
  var UNKNOWN_MODEL_COLOUR = "#9aa0a6";
  // How many nodes a conversation shows when first opened, widest levels first.
  var INITIAL_BUDGET = 120;
  // Above this many cells the line diff gives up on LCS and shows both texts.
  var DIFF_CELL_LIMIT = 4000000;
  var SHAPES = {
    "top-down": { w: 200, h: 48, gapX: 22, gapY: 48 },
    "left-right": { w: 230, h: 48, gapX: 64, gapY: 16 },
  };
  var PAD = 30;
  // The least zoom at which labels stay readable (12 px text drawn at 9 px):
  // a tree opens no smaller, and Fit zooms out no further.
  var READABLE_ZOOM = 0.75;

  // ---- Small DOM helpers: text only ever goes in through textContent. ----

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function svgEl(tag, attributes, text) {
    var node = document.createElementNS(SVG_NS, tag);
    if (attributes) {
      for (var key in attributes) {
        if (Object.prototype.hasOwnProperty.call(attributes, key)) {
          node.setAttribute(key, String(attributes[key]));
        }
      }
    }
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function excerpt(text, width) {
    if (text === null || text === undefined) return "";
    var line = String(text).replace(/\s+/g, " ").trim();
    return line.length > width ? line.slice(0, Math.max(1, width - 1)) + "\u2026" : line;
  }

  function plural(count, one, many) {
    return count + " " + (count === 1 ? one : many || one + "s");
  }

  // "2025-09-27T10:01:00.000000+00:00" as "2025-09-27 10:01:00"; other text as it is.
  function shortTime(value) {
    if (value === null || value === undefined) return "";
    var text = String(value);
    var parts = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(:\d{2})?)/.exec(text);
    return parts ? parts[1] + " " + parts[2] : text;
  }

  function formatNumber(value) {
    return value === null || value === undefined ? "\u2014" : Number(value).toLocaleString("en");
  }

  // ---- The data: each conversation's node-link graph, indexed for walking. ----

  var DATA = JSON.parse(document.getElementById("convgraph-data").textContent);

  function Conversation(raw, index) {
    var graph = raw.graph || {};
    var nodes = graph.nodes || [];
    var links = graph.links || graph.edges || [];
    var count = nodes.length;
    var indexOf = new Map();
    var i;
    this.index = index;
    this.id = String(raw.id);
    this.name = raw.name === null || raw.name === undefined ? null : String(raw.name);
    this.stats = raw.stats || {};
    this.nodes = nodes;
    this.ids = new Array(count);
    for (i = 0; i < count; i++) {
      this.ids[i] = String(nodes[i].id);
      indexOf.set(this.ids[i], i);
    }
    this.indexOf = indexOf;
    this.parent = new Int32Array(count).fill(-1);
    this.children = new Array(count);
    for (i = 0; i < count; i++) this.children[i] = [];
    for (i = 0; i < links.length; i++) {
      var from = indexOf.get(String(links[i].source));
      var to = indexOf.get(String(links[i].target));
      if (from === undefined || to === undefined || this.parent[to] >= 0) continue;
      this.parent[to] = from;
      this.children[from].push(to);
    }
    // Nodes are in log order; keep each node's children in that order too.
    for (i = 0; i < count; i++) {
      if (this.children[i].length > 1) this.children[i].sort(function (a, b) { return a - b; });
    }
    this.roots = [];
    for (i = 0; i < count; i++) if (this.parent[i] < 0) this.roots.push(i);
    // Depths top-down, then subtree sizes bottom-up over the same order.
    this.depth = new Int32Array(count);
    this.order = [];
    var seen = new Uint8Array(count);
    var queue = this.roots.slice();
    var head = 0;
    for (var next = 0; next <= count; next++) {
      for (; head < queue.length; head++) {
        var node = queue[head];
        seen[node] = 1;
        this.order.push(node);
        var kids = this.children[node];
        for (var k = 0; k < kids.length; k++) {
          this.depth[kids[k]] = this.depth[node] + 1;
          queue.push(kids[k]);
        }
      }
      // convgraph's trees have no cycles, but a graph made by hand might:
      // a node no root reaches is cut from its parent and becomes a root.
      while (next < count && seen[next]) next++;
      if (next < count) {
        var above = this.children[this.parent[next]];
        above.splice(above.indexOf(next), 1);
        this.parent[next] = -1;
        this.roots.push(next);
        queue.push(next);
      }
    }
    this.roots.sort(function (a, b) { return a - b; });
    this.size = new Int32Array(count).fill(1);
    for (i = this.order.length - 1; i >= 0; i--) {
      var p = this.parent[this.order[i]];
      if (p >= 0) this.size[p] += this.size[this.order[i]];
    }
    // A coding agent's subagent (its nodes' parts carry `sidechain`, the
    // agent's id) starts folded into its first node's box, under its Task
    // call's node (convgraph.present.subagents).
    this.agent = new Array(count);
    for (i = 0; i < count; i++) this.agent[i] = sidechainOf(nodes[i]);
    this.subagent = new Uint8Array(count);
    for (i = 0; i < count; i++) {
      var up = this.parent[i];
      if (this.agent[i] !== null && (up < 0 || this.agent[up] !== this.agent[i])) this.subagent[i] = 1;
    }
    this.folded = this.subagent.slice();
    this.expanded = null; // made on first display
    this.haystack = null; // lower-cased texts, made on first search
    this.hits = []; // the matching nodes, in log order
    this.match = new Uint8Array(count);
    this.matchesBelow = new Int32Array(count);
    this.matchCount = 0;
  }

  // The ids of the earlier calls the node's run folds, as strings.
  function callsOf(node) {
    return Array.isArray(node.calls) ? node.calls.map(String) : [];
  }

  function sidechainOf(node) {
    var parts = Array.isArray(node.parts) ? node.parts : [];
    for (var p = 0; p < parts.length; p++) {
      var agent = parts[p] && typeof parts[p] === "object" ? parts[p].sidechain : null;
      if (agent !== null && agent !== undefined) return String(agent);
    }
    return null;
  }

  Conversation.prototype.title = function () {
    return this.name || this.id;
  };

  // Where there are several roots, the start of the conversation is a branch
  // point of its own: the roots are its alternatives.
  Conversation.prototype.hasStart = function () {
    return this.roots.length > 1;
  };

  // The alternatives tried at the node's place, the node among them, in log
  // order: its parent's children, or the roots (convgraph.model.tree.alternatives).
  Conversation.prototype.alternatives = function (node) {
    var above = this.parent[node];
    return above < 0 ? this.roots : this.children[above];
  };

  // As convgraph.model.tree.siblings: the other alternatives.
  Conversation.prototype.siblings = function (node) {
    return this.alternatives(node).filter(function (other) { return other !== node; });
  };

  Conversation.prototype.path = function (node) {
    var path = [];
    for (var at = node; at >= 0; at = this.parent[at]) path.push(at);
    return path.reverse();
  };

  /* Open the widest levels first until the budget of drawn nodes is spent,
   * and no wider than `slots` nodes side by side (the leaves of what is
   * drawn), so that the tree opens whole across the canvas at a readable
   * size rather than cut at both sides. */
  Conversation.prototype.initialExpansion = function (slots) {
    this.expanded = new Uint8Array(this.nodes.length);
    var shown = this.roots.length;
    var across = this.roots.length;
    for (var i = 0; i < this.order.length; i++) {
      var node = this.order[i];
      var kids = this.children[node].length;
      if (!kids) continue;
      if (this.depth[node] > 0 && !this.expanded[this.parent[node]]) continue;
      if (this.folded[node]) continue;
      if (shown + kids > INITIAL_BUDGET || across + kids - 1 > slots) continue;
      this.expanded[node] = 1;
      shown += kids;
      across += kids - 1;
    }
  };

  // Show the node: open its ancestors, and its subagent's fold if it is
  // one. True when a subagent was unfolded (the drawing changes).
  Conversation.prototype.reveal = function (node) {
    var unfolded = this.unfold(node);
    for (var at = this.parent[node]; at >= 0; at = this.parent[at]) {
      this.expanded[at] = 1;
      if (this.unfold(at)) unfolded = true;
    }
    return unfolded;
  };

  Conversation.prototype.unfold = function (node) {
    if (!this.folded[node]) return false;
    this.folded[node] = 0;
    this.expanded[node] = 1;
    return true;
  };

  /* What search reads of a node, in the order a hit names the first place
   * it is found: the prompt, the response, then its run's parts (reasoning,
   * tool calls with their arguments, tool results, code and its output). */
  function searchFields(node) {
    var fields = [["prompt", node.prompt], ["response", node.response]];
    (Array.isArray(node.parts) ? node.parts : []).forEach(function (part) {
      if (!part || typeof part !== "object") return;
      var words = function (list) { return list.filter(Boolean).join(" "); };
      if (part.type === "reasoning") fields.push(["reasoning", part.text]);
      else if (part.type === "tool_call") fields.push(["tool call", words([part.name, compactJSON(part.arguments)])]);
      else if (part.type === "tool_result") {
        fields.push(["tool result", words([part.name, compactJSON(part.output), part.error])]);
      } else if (part.type === "code") fields.push(["code", part.text]);
      else if (part.type === "code_output") fields.push(["code output", part.text]);
    });
    return fields.map(function (field) {
      return [field[0], field[1] === null || field[1] === undefined ? "" : String(field[1])];
    });
  }

  function compactJSON(value) {
    if (value === null || value === undefined) return "";
    if (typeof value === "string") return value;
    var text = JSON.stringify(value);
    return text === undefined ? String(value) : text;
  }

  /* Every node's searched text, lower-cased, its fields apart by NUL (which
   * no needle holds: the box's text is trimmed text). `narrow`: the needle
   * holds the last one, so only the last one's hits can match (as a word is
   * typed, each letter searches fewer nodes). */
  Conversation.prototype.search = function (needle, narrow) {
    var count = this.nodes.length;
    var i;
    var candidates = narrow ? this.hits : null;
    this.match.fill(0);
    this.matchesBelow.fill(0);
    this.matchCount = 0;
    this.hits = [];
    if (!needle) return;
    if (!this.haystack) {
      this.haystack = new Array(count);
      for (i = 0; i < count; i++) {
        this.haystack[i] = searchFields(this.nodes[i]).map(function (field) {
          return field[1];
        }).join("\u0000").toLowerCase();
      }
    }
    var last = candidates ? candidates.length : count;
    for (var k = 0; k < last; k++) {
      i = candidates ? candidates[k] : k;
      if (this.haystack[i].indexOf(needle) >= 0) {
        this.match[i] = 1;
        this.matchCount++;
        this.hits.push(i);
      }
    }
    for (i = this.order.length - 1; i >= 0; i--) {
      var child = this.order[i];
      var p = this.parent[child];
      if (p >= 0) this.matchesBelow[p] += this.matchesBelow[child] + this.match[child];
    }
  };

  /* Where in a node the needle is first found: the field's name, its text,
   * and the hit's offset in it (-1 where lower-casing changed the text's
   * length, so that an offset in one is not one in the other). */
  Conversation.prototype.hitIn = function (node, needle) {
    var fields = searchFields(this.nodes[node]);
    for (var i = 0; i < fields.length; i++) {
      var lower = fields[i][1].toLowerCase();
      var at = lower.indexOf(needle);
      if (at >= 0) {
        return { field: fields[i][0], text: fields[i][1], at: lower.length === fields[i][1].length ? at : -1 };
      }
    }
    return { field: "prompt", text: fields[0][1], at: -1 };
  };

  var conversations = (DATA.conversations || []).map(function (raw, index) {
    return new Conversation(raw, index);
  });
  var where = new Map(); // node id -> [conversation, index]
  conversations.forEach(function (conversation) {
    conversation.ids.forEach(function (id, index) {
      if (!where.has(id)) where.set(id, [conversation, index]);
    });
  });
  // The id of a call inside a run (convgraph.export.common.CALLS) names the
  // run's node too: a link to it, or a script's select, finds the node.
  conversations.forEach(function (conversation) {
    conversation.nodes.forEach(function (node, index) {
      callsOf(node).forEach(function (id) {
        if (!where.has(id)) where.set(id, [conversation, index]);
      });
    });
  });

  // One colour per model, in order of first use across the export.
  var models = [];
  var modelColour = new Map();
  conversations.forEach(function (conversation) {
    conversation.nodes.forEach(function (node) {
      var model = node.model === null || node.model === undefined ? null : String(node.model);
      if (model !== null && !modelColour.has(model)) {
        modelColour.set(model, PALETTE[models.length % PALETTE.length]);
        models.push(model);
      }
    });
  });

  function colourOf(model) {
    return model === null || model === undefined ? UNKNOWN_MODEL_COLOUR : modelColour.get(String(model));
  }

  // ---- The branch diff, computed here from the parent links. ----

  // Lines as Python's str.splitlines() finds them, so that the page's diff
  // lines up with convgraph.diff's.
  function splitLines(text) {
    if (text === null || text === undefined || text === "") return [];
    var lines = String(text).split(/\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/);
    if (lines[lines.length - 1] === "") lines.pop();
    return lines;
  }

  /* Line diff by longest common subsequence, after trimming the common ends:
   * lines prefixed " ", "-" (only in A) or "+" (only in B), as in a unified
   * diff with every line as context. Empty when the texts are the same. */
  function lineDiff(before, after) {
    var a = splitLines(before);
    var b = splitLines(after);
    var out = [];
    var start = 0;
    while (start < a.length && start < b.length && a[start] === b[start]) start++;
    if (start === a.length && start === b.length) return out;
    var endA = a.length;
    var endB = b.length;
    while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) { endA--; endB--; }
    var i, j;
    for (i = 0; i < start; i++) out.push(" " + a[i]);
    var rows = endA - start;
    var cols = endB - start;
    if (rows * cols > DIFF_CELL_LIMIT) {
      for (i = start; i < endA; i++) out.push("-" + a[i]);
      for (j = start; j < endB; j++) out.push("+" + b[j]);
    } else {
      var width = cols + 1;
      var table = new Uint32Array((rows + 1) * width);
      for (i = rows - 1; i >= 0; i--) {
        for (j = cols - 1; j >= 0; j--) {
          table[i * width + j] = a[start + i] === b[start + j]
            ? table[(i + 1) * width + j + 1] + 1
            : Math.max(table[(i + 1) * width + j], table[i * width + j + 1]);
        }
      }
      i = 0;
      j = 0;
      while (i < rows && j < cols) {
        if (a[start + i] === b[start + j]) {
          out.push(" " + a[start + i]); i++; j++;
        } else if (table[(i + 1) * width + j] >= table[i * width + j + 1]) {
          out.push("-" + a[start + i]); i++;
        } else {
          out.push("+" + b[start + j]); j++;
        }
      }
      for (; i < rows; i++) out.push("-" + a[start + i]);
      for (; j < cols; j++) out.push("+" + b[start + j]);
    }
    for (i = endA; i < a.length; i++) out.push(" " + a[i]);
    return out;
  }

  var USAGE = ["input_tokens", "output_tokens", "duration_ms"];

  function stepSide(conversation, node) {
    if (node === undefined) return null;
    var data = conversation.nodes[node];
    var side = { id: conversation.ids[node], model: data.model === undefined ? null : data.model };
    USAGE.forEach(function (key) { side[key] = data[key] === undefined ? null : data[key]; });
    return side;
  }

  // As convgraph.diff's BranchTotals: a sum over the nodes that report it.
  function branchTotals(conversation, nodes) {
    var totals = { nodes: nodes.length, models: [] };
    USAGE.forEach(function (key) {
      var known = nodes.filter(function (n) {
        return conversation.nodes[n][key] !== null && conversation.nodes[n][key] !== undefined;
      });
      totals[key] = known.length || !nodes.length
        ? known.reduce(function (sum, n) { return sum + conversation.nodes[n][key]; }, 0)
        : null;
    });
    nodes.forEach(function (n) {
      var model = conversation.nodes[n].model;
      if (model && totals.models.indexOf(model) < 0) totals.models.push(model);
    });
    return totals;
  }

  /* The diff of the branches down to nodes a and b, in the shape of
   * convgraph.diff's BranchDiff.to_dict(): fork_point (their lowest common
   * ancestor; null here when they grow from different roots, where Python
   * raises UnrelatedNodes), shared (root to fork point), a and b (below it),
   * steps (the two paths paired step by step, with line diffs of prompts
   * and responses) and totals. */
  function branchDiff(idA, idB) {
    var found = where.get(String(idA));
    var other = where.get(String(idB));
    if (!found || !other) throw new Error("unknown node");
    if (found[0] !== other[0]) throw new Error("the two nodes are in different conversations");
    var conversation = found[0];
    var pathA = conversation.path(found[1]);
    var pathB = conversation.path(other[1]);
    var common = 0;
    while (common < pathA.length && common < pathB.length && pathA[common] === pathB[common]) common++;
    var ids = function (list) { return list.map(function (i) { return conversation.ids[i]; }); };
    var shared = pathA.slice(0, common);
    var belowA = pathA.slice(common);
    var belowB = pathB.slice(common);
    var steps = [];
    for (var k = 0; k < Math.max(belowA.length, belowB.length); k++) {
      var nodeA = belowA[k] === undefined ? {} : conversation.nodes[belowA[k]];
      var nodeB = belowB[k] === undefined ? {} : conversation.nodes[belowB[k]];
      steps.push({
        step: k + 1,
        a: stepSide(conversation, belowA[k]),
        b: stepSide(conversation, belowB[k]),
        same_prompt: (nodeA.prompt || "") === (nodeB.prompt || ""),
        same_response: (nodeA.response || "") === (nodeB.response || ""),
        prompt_diff: lineDiff(nodeA.prompt, nodeB.prompt),
        response_diff: lineDiff(nodeA.response, nodeB.response),
      });
    }
    return {
      node_a: conversation.ids[found[1]],
      node_b: conversation.ids[other[1]],
      tree_id: conversation.id,
      fork_point: common ? conversation.ids[pathA[common - 1]] : null,
      shared: ids(shared),
      a: ids(belowA),
      b: ids(belowB),
      steps: steps,
      totals: {
        shared: branchTotals(conversation, shared),
        a: branchTotals(conversation, belowA),
        b: branchTotals(conversation, belowB),
      },
    };
  }

  // ---- State ----

  var state = {
    conversation: null,
    orientation: DATA.orientation === "left-right" ? "left-right" : "top-down",
    zoom: 1,
    selected: null, // node index in the current conversation
    second: null, // the node it is compared with
    comparing: false, // the next click picks the second node
    needle: "",
  };
  var drawn = { nodes: new Map(), edges: new Map() };

  var $ = function (id) { return document.getElementById(id); };
  var svg = $("tree");
  var canvas = $("canvas");
  var panel = $("panel");

  // ---- Links out (convgraph.export.html.PageLinks): a page an application
  // serves links each node to its record there, and its header back to
  // where the trees came from. Only a path on the same site or an http(s)
  // address is followed, never a javascript: or data: URL. ----

  var LINKS = DATA.links || {};

  function safeHref(value) {
    return typeof value === "string" && /^(\/(?![\/\\])|https?:\/\/)/i.test(value) ? value : null;
  }

  function link(href, text) {
    var anchor = el("a", null, text);
    anchor.href = href;
    return anchor;
  }

  var home = safeHref(LINKS.home);
  if (home) {
    var homeLink = link(home, LINKS.homeLabel || "Back");
    homeLink.id = "home-link";
    $("title").parentNode.insertBefore(homeLink, $("title"));
  }

  // ---- The list of conversations ----

  // What the branches left cost: the share of the tree's tokens spent off
  // its active path (`abandoned_share` of the statistics), where any was.
  function abandonedWords(stats) {
    var share = stats.abandoned_share;
    return share ? Math.round(share * 100) + "% of tokens on abandoned branches" : "";
  }

  function figures(conversation) {
    var stats = conversation.stats;
    var parts = [
      plural(conversation.nodes.length, "node"),
      plural(conversation.roots.length, "root"),
      plural(stats.leaves !== undefined ? stats.leaves : 0, "leaf", "leaves"),
      "depth " + (stats.max_depth !== undefined ? stats.max_depth : 0),
    ];
    if (stats.branch_points) parts.push(plural(stats.branch_points, "branch point"));
    return parts.join(" \u00b7 ");
  }

  function modelChips(list) {
    var chips = el("span", "chips");
    (list || []).forEach(function (model) {
      var chip = el("span", "chip");
      var swatch = el("span", "swatch");
      swatch.style.backgroundColor = colourOf(model);
      chip.appendChild(swatch);
      chip.appendChild(document.createTextNode(String(model)));
      chips.appendChild(chip);
    });
    return chips;
  }

  function drawList() {
    var list = $("conversation-list");
    clear(list);
    conversations.forEach(function (conversation) {
      var item = el("li");
      var button = el("button");
      button.type = "button";
      button.setAttribute("data-conversation", conversation.id);
      button.setAttribute("aria-current", conversation === state.conversation ? "true" : "false");
      if (state.needle && conversation.matchCount) {
        button.appendChild(el("span", "match-count", conversation.matchCount));
      }
      button.appendChild(el("span", "conversation-name", conversation.title()));
      if (conversation.name) button.appendChild(el("span", "conversation-id mono", conversation.id));
      button.appendChild(el("span", "conversation-figures", figures(conversation)));
      var tokens = (conversation.stats.input_tokens || 0) + (conversation.stats.output_tokens || 0);
      if (tokens) {
        button.appendChild(el("span", "conversation-figures", formatNumber(tokens) + " tokens"));
      }
      var left = abandonedWords(conversation.stats);
      if (left) button.appendChild(el("span", "conversation-figures", left));
      button.appendChild(modelChips(conversation.stats.models));
      button.addEventListener("click", function () { show(conversation); });
      conversation.button = button;
      item.appendChild(button);
      list.appendChild(item);
    });
  }

  // Each conversation's count of matches, in its list item, after a search.
  function drawMatchCounts() {
    conversations.forEach(function (conversation) {
      var button = conversation.button;
      var badge = button.querySelector(".match-count");
      if (state.needle && conversation.matchCount) {
        if (!badge) {
          badge = el("span", "match-count");
          button.insertBefore(badge, button.firstChild);
        }
        badge.textContent = String(conversation.matchCount);
      } else if (badge) {
        badge.remove();
      }
    });
  }

  // The models of the conversation shown, each with its count of nodes there,
  // in the order of the page's colours.
  function drawLegend(conversation) {
    var legend = $("legend");
    clear(legend);
    var modelCount = new Map();
    (conversation ? conversation.nodes : []).forEach(function (node) {
      var model = node.model === null || node.model === undefined ? null : String(node.model);
      modelCount.set(model, (modelCount.get(model) || 0) + 1);
    });
    var keys = models.filter(function (model) { return modelCount.has(model); });
    if (modelCount.has(null)) keys.push(null);
    keys.forEach(function (model) {
      var item = el("span", "legend-item");
      item.setAttribute("data-model", model === null ? "" : model);
      var swatch = el("span", "swatch");
      swatch.style.backgroundColor = colourOf(model);
      item.appendChild(swatch);
      item.appendChild(document.createTextNode(
        (model === null ? "unknown model" : model) + " (" + modelCount.get(model) + ")"));
      legend.appendChild(item);
    });
    var marker = function (build, text) {
      var item = el("span", "legend-item");
      var icon = svgEl("svg", { width: 16, height: 16, viewBox: "-8 -8 16 16", "aria-hidden": "true" });
      build(icon);
      item.appendChild(icon);
      item.appendChild(document.createTextNode(text));
      legend.appendChild(item);
    };
    marker(function (icon) {
      icon.appendChild(svgEl("circle", { r: 7, class: "badge-branch" }));
      icon.appendChild(svgEl("text", { class: "badge-count", "text-anchor": "middle", dy: "0.35em" }, "2"));
    }, "branch point (children)");
    marker(function (icon) {
      icon.appendChild(svgEl("path", { d: "M0 -6 L6 0 L0 6 L-6 0 Z", class: "badge-leaf" }));
    }, "leaf");
    marker(function (icon) {
      var toggle = svgEl("g", { class: "toggle" });
      toggle.appendChild(svgEl("circle", { r: 7 }));
      toggle.appendChild(svgEl("text", { "text-anchor": "middle", dy: "0.35em" }, "+"));
      icon.appendChild(toggle);
    }, "collapsed: click to expand");
  }

  // ---- The drawing ----

  function show(conversation, keepSelection) {
    var changed = state.conversation !== conversation;
    if (changed) {
      state.conversation = conversation;
      if (!keepSelection) {
        state.selected = null;
        state.second = null;
        state.comparing = false;
        drawPanel();
      }
    }
    if (!conversation.expanded) conversation.initialExpansion(slotsThatFit());
    $("conversation-title").textContent = conversation.title();
    var stats = conversation.stats;
    var line = [figures(conversation)];
    if (conversation.name) line.unshift(conversation.id);
    if (stats.first_datetime) {
      var first = shortTime(stats.first_datetime);
      var last = shortTime(stats.last_datetime);
      line.push(first === last ? first : first + " \u2013 " + last);
    }
    var left = abandonedWords(stats);
    if (left) line.push(left);
    $("conversation-stats").textContent = line.join(" \u00b7 ");
    // The list marks the conversation shown and scrolls to it, wherever it
    // was opened from (a search hit, Enter, a link to a node).
    conversations.forEach(function (other) {
      if (other.button) other.button.setAttribute("aria-current", other === conversation ? "true" : "false");
    });
    if (changed && conversation.button) conversation.button.scrollIntoView({ block: "nearest" });
    if (changed) drawLegend(conversation);
    draw();
    if (changed) {
      fitWidth(READABLE_ZOOM);
      scrollToStart(conversation);
    }
  }

  // How many nodes fit side by side across the canvas at a readable zoom,
  // drawn top-down (left to right, the tree grows across as it goes deeper,
  // and scrolls that way as a timeline does).
  function slotsThatFit() {
    if (state.orientation !== "top-down" || !canvas.clientWidth) return Infinity;
    var shape = SHAPES["top-down"];
    var units = (canvas.clientWidth - 4) / READABLE_ZOOM;
    return Math.max(1, Math.floor((units - PAD * 2 - 40 + shape.gapX) / (shape.w + shape.gapX)));
  }

  // Zoom out, not below `least`, until the tree fits the width of the canvas.
  function fitWidth(least) {
    var box = svg.viewBox.baseVal;
    if (!box || !box.width) return;
    var room = canvas.clientWidth - 4;
    var wanted = Math.min(1, Math.max(least, room / box.width));
    if (wanted !== state.zoom) zoom(wanted, true);
  }

  // Where the drawing's origin is, in the canvas's scrolled coordinates.
  function drawingOffset() {
    var box = svg.getBoundingClientRect();
    var frame = canvas.getBoundingClientRect();
    return [box.left - frame.left - canvas.clientLeft + canvas.scrollLeft,
      box.top - frame.top - canvas.clientTop + canvas.scrollTop];
  }

  // Bring the first root into view: a wide tree centres it far to the right.
  function scrollToStart(conversation) {
    if (!scene || !scene.pos.has(conversation.roots[0])) return;
    var at = scene.startPos || scene.pos.get(conversation.roots[0]);
    var offset = drawingOffset();
    canvas.scrollTop = 0;
    canvas.scrollLeft = offset[0] + (at[0] + scene.shape.w / 2) * state.zoom - canvas.clientWidth / 2;
    paint();
  }

  function visibleOrder(conversation) {
    var order = [];
    var stack = conversation.roots.slice().reverse();
    while (stack.length) {
      var node = stack.pop();
      order.push(node);
      if (conversation.expanded[node]) {
        var kids = conversation.children[node];
        for (var k = kids.length - 1; k >= 0; k--) stack.push(kids[k]);
      }
    }
    return order;
  }

  /* Each drawn leaf gets the next slot across; a parent sits over the middle
   * of its first and last child. Linear, and subtrees never overlap. */
  function layout(conversation, order) {
    var slot = new Map();
    var next = 0;
    var deepest = 0;
    var i, node, kids;
    for (i = 0; i < order.length; i++) {
      node = order[i];
      kids = conversation.children[node];
      if (!(conversation.expanded[node] && kids.length)) slot.set(node, next++);
      if (conversation.depth[node] > deepest) deepest = conversation.depth[node];
    }
    for (i = order.length - 1; i >= 0; i--) {
      node = order[i];
      kids = conversation.children[node];
      if (conversation.expanded[node] && kids.length) {
        slot.set(node, (slot.get(kids[0]) + slot.get(kids[kids.length - 1])) / 2);
      }
    }
    // Several roots hang from the start, one level above them.
    var lift = conversation.hasStart() ? 1 : 0;
    var start = lift
      ? (slot.get(conversation.roots[0]) + slot.get(conversation.roots[conversation.roots.length - 1])) / 2
      : null;
    return { slot: slot, across: Math.max(next, 1), down: deepest + 1 + lift, lift: lift, start: start };
  }

  /* What draw() laid out: every node of the expanded part has a position,
   * but only those near the visible part of the canvas are in the DOM
   * (paint), so even an expanded 5,000-node tree costs a screenful. */
  var scene = null;
  // Below this many laid-out nodes, all of them are in the DOM.
  var PAINT_ALL_BELOW = 400;
  // How far beyond the visible part nodes are already in the DOM, in pixels.
  var PAINT_MARGIN = 500;

  function draw() {
    var conversation = state.conversation;
    clear(svg);
    drawn.nodes = new Map();
    drawn.edges = new Map();
    scene = null;
    if (!conversation) return;
    var shape = SHAPES[state.orientation];
    var topDown = state.orientation === "top-down";
    var order = visibleOrder(conversation);
    var placed = layout(conversation, order);
    var stepAcross = (topDown ? shape.w : shape.h) + (topDown ? shape.gapX : shape.gapY);
    var stepDown = (topDown ? shape.h : shape.w) + (topDown ? shape.gapY : shape.gapX);
    var pos = new Map();
    var place = function (slot, depth) {
      var across = PAD + slot * stepAcross;
      var down = PAD + depth * stepDown;
      return topDown ? [across, down] : [down, across];
    };
    order.forEach(function (node) {
      pos.set(node, place(placed.slot.get(node), conversation.depth[node] + placed.lift));
    });
    // Room on the right for the last column's "N hidden, M matching" labels.
    var width = topDown
      ? PAD * 2 + placed.across * stepAcross - shape.gapX + 40
      : PAD * 2 + placed.down * stepDown - shape.gapX + 150;
    var height = topDown
      ? PAD * 2 + placed.down * stepDown - shape.gapY + 20
      : PAD * 2 + placed.across * stepAcross - shape.gapY;
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    svg.setAttribute("width", String(Math.ceil(width * state.zoom)));
    svg.setAttribute("height", String(Math.ceil(height * state.zoom)));
    svg.setAttribute("data-orientation", state.orientation);
    svg.setAttribute("data-laid-out", String(order.length));

    // One clip for every node's labels: its coordinates are each node's own.
    var defs = svgEl("defs");
    var clip = svgEl("clipPath", { id: "label-clip" });
    clip.appendChild(svgEl("rect", { x: 8, y: 0, width: shape.w - 16, height: shape.h }));
    defs.appendChild(clip);
    svg.appendChild(defs);
    var edges = svgEl("g", { class: "edges" });
    var nodes = svgEl("g", { class: "nodes" });
    svg.appendChild(edges);
    svg.appendChild(nodes);
    scene = {
      conversation: conversation,
      order: order,
      pos: pos,
      shape: shape,
      topDown: topDown,
      chars: Math.floor((shape.w - 28) / 6.2),
      edges: edges,
      nodes: nodes,
      everything: order.length < PAINT_ALL_BELOW,
      start: null,
      startPos: null,
      startEdges: new Map(),
    };
    if (placed.lift) drawStart(conversation, place(placed.start, 0));
    paint();
  }

  /* The start of a conversation with several roots: one box the roots hang
   * from, always in the DOM (it is one element, and its edges one a root). */
  function drawStart(conversation, at) {
    var shape = scene.shape;
    var count = conversation.roots.length;
    var group = svgEl("g", {
      class: "start",
      transform: "translate(" + at[0] + "," + at[1] + ")",
      role: "img",
      "data-alternatives": count,
      "aria-label": "The start of the conversation: " + plural(count, "alternative"),
    });
    group.appendChild(svgEl("title", null,
      "The start: the first turn was asked " + count + " ways. Select a root, then [ and ] move between them."));
    group.appendChild(svgEl("rect", { class: "body", width: shape.w, height: shape.h, rx: shape.h / 2 }));
    group.appendChild(svgEl("text", { class: "label", x: shape.w / 2, y: 19, "text-anchor": "middle" }, "Start"));
    group.appendChild(svgEl("text", { class: "sublabel", x: shape.w / 2, y: 37, "text-anchor": "middle" },
      plural(count, "alternative")));
    var badge = svgEl("g", { class: "badge", transform: "translate(" + shape.w + ",0)" });
    badge.appendChild(svgEl("circle", { r: 9, class: "badge-branch" }));
    badge.appendChild(svgEl("text", { class: "badge-count", "text-anchor": "middle", dy: "0.35em" }, count));
    group.appendChild(badge);
    conversation.roots.forEach(function (root) {
      var edge = drawEdge(at, scene.pos.get(root), shape, scene.topDown);
      edge.classList.add("start-edge");
      scene.edges.appendChild(edge);
      scene.startEdges.set(root, edge);
    });
    scene.nodes.appendChild(group);
    scene.start = group;
    scene.startPos = at;
  }

  // The part of the drawing to have in the DOM, in the drawing's units.
  function paintWindow() {
    var offset = drawingOffset();
    var zoom = state.zoom;
    return {
      left: (canvas.scrollLeft - offset[0] - PAINT_MARGIN) / zoom,
      top: (canvas.scrollTop - offset[1] - PAINT_MARGIN) / zoom,
      right: (canvas.scrollLeft - offset[0] + canvas.clientWidth + PAINT_MARGIN) / zoom,
      bottom: (canvas.scrollTop - offset[1] + canvas.clientHeight + PAINT_MARGIN) / zoom,
    };
  }

  // Put in the DOM the nodes and edges near the visible part; take out the rest.
  function paint() {
    if (!scene) return;
    var conversation = scene.conversation;
    var shape = scene.shape;
    var view = scene.everything ? null : paintWindow();
    var meets = function (x1, y1, x2, y2) {
      return !view || (x2 >= view.left && x1 <= view.right && y2 >= view.top && y1 <= view.bottom);
    };
    var wanted = [];
    var wantedEdges = [];
    var keep = new Set();
    var keepEdges = new Set();
    scene.order.forEach(function (node) {
      var at = scene.pos.get(node);
      // The box, with its badge, toggle and "hidden" label around it.
      if (meets(at[0] - 10, at[1] - 10, at[0] + shape.w + 160, at[1] + shape.h + 30)) {
        keep.add(node);
        if (!drawn.nodes.has(node)) wanted.push(node);
      }
      var above = conversation.parent[node];
      if (above >= 0) {
        var from = scene.pos.get(above);
        if (meets(Math.min(at[0], from[0]), Math.min(at[1], from[1]),
          Math.max(at[0], from[0]) + shape.w, Math.max(at[1], from[1]) + shape.h)) {
          keepEdges.add(node);
          if (!drawn.edges.has(node)) wantedEdges.push(node);
        }
      }
    });
    drawn.nodes.forEach(function (group, node) {
      if (!keep.has(node)) { group.remove(); drawn.nodes.delete(node); }
    });
    drawn.edges.forEach(function (edge, node) {
      if (!keepEdges.has(node)) { edge.remove(); drawn.edges.delete(node); }
    });
    wantedEdges.forEach(function (node) {
      var edge = drawEdge(scene.pos.get(conversation.parent[node]), scene.pos.get(node), shape, scene.topDown);
      scene.edges.appendChild(edge);
      drawn.edges.set(node, edge);
    });
    wanted.forEach(function (node) {
      var at = scene.pos.get(node);
      var group = drawNode(conversation, node, at[0], at[1], shape, scene.topDown, scene.chars);
      scene.nodes.appendChild(group);
      drawn.nodes.set(node, group);
    });
    decorate();
  }

  function drawEdge(from, to, shape, topDown) {
    var d;
    if (topDown) {
      var x1 = from[0] + shape.w / 2, y1 = from[1] + shape.h, x2 = to[0] + shape.w / 2, y2 = to[1];
      var midY = (y1 + y2) / 2;
      d = "M" + x1 + " " + y1 + " C" + x1 + " " + midY + " " + x2 + " " + midY + " " + x2 + " " + y2;
    } else {
      var sx = from[0] + shape.w, sy = from[1] + shape.h / 2, ex = to[0], ey = to[1] + shape.h / 2;
      var midX = (sx + ex) / 2;
      d = "M" + sx + " " + sy + " C" + midX + " " + sy + " " + midX + " " + ey + " " + ex + " " + ey;
    }
    return svgEl("path", { class: "edge", d: d });
  }

  function drawNode(conversation, node, x, y, shape, topDown, chars) {
    var data = conversation.nodes[node];
    var kids = conversation.children[node].length;
    var open = conversation.expanded[node] === 1;
    var folded = conversation.folded[node] === 1;
    var classes = ["node"];
    if (conversation.subagent[node]) classes.push("subagent");
    if (folded) classes.push("folded");
    if (kids > 1) classes.push("branch");
    if (!kids) classes.push("leaf");
    // The branch attributes: the active path (the branch last used), the
    // answer the user preferred, a node with the user's note.
    if (data.active) classes.push("active");
    if (data.preferred) classes.push("preferred");
    if (data.note) classes.push("noted");
    if (conversation.parent[node] < 0) classes.push("root");
    var group = svgEl("g", {
      class: classes.join(" "),
      transform: "translate(" + x + "," + y + ")",
      tabindex: 0,
      role: "button",
      "data-id": conversation.ids[node],
      "data-index": node,
      "aria-label": "Node " + conversation.ids[node] + ": " + excerpt(data.prompt, 80),
    });
    group.appendChild(svgEl("title", null,
      conversation.ids[node] + (data.model ? "  \u00b7  " + data.model : "") +
      (data.preferred ? "  \u2605 preferred" : "") + "\n" + excerpt(data.prompt, 300) +
      (data.note ? "\n\u270e " + excerpt(data.note, 300) : "")));
    group.appendChild(svgEl("rect", { class: "body", width: shape.w, height: shape.h, rx: 6 }));
    group.appendChild(svgEl("rect", { class: "model-stripe", width: 6, height: shape.h - 2, x: 1, y: 1, rx: 2, fill: colourOf(data.model) }));
    var prompt = excerpt(data.prompt, chars);
    var labels = svgEl("g", { "clip-path": "url(#label-clip)" });
    if (folded) {
      // A subagent's subtree, folded: one box that says whose and how big.
      group.setAttribute("aria-label", "Subagent " + conversation.agent[node] + ", folded: " +
        plural(conversation.size[node], "node") + "; click to open");
      labels.appendChild(svgEl("text", { class: "label", x: 14, y: 19 },
        excerpt("\u2937 subagent " + conversation.agent[node], chars)));
      labels.appendChild(svgEl("text", { class: "sublabel", x: 14, y: 37 },
        plural(conversation.size[node], "node") + " \u00b7 click to open"));
      group.appendChild(labels);
      return group;
    }
    if (conversation.subagent[node]) prompt = excerpt("\u2937 " + conversation.agent[node] + " \u00b7 " + (data.prompt || ""), chars);
    labels.appendChild(svgEl("text", { class: prompt ? "label" : "label none", x: 14, y: 19 },
      (data.preferred ? "\u2605 " : "") + (data.note ? "\u270e " : "") + (prompt || "(no prompt)")));
    // A tool chain is one step: its calls are named before its answer.
    var calls = data.tool_calls ? "\u21b3 " + (data.tools || plural(data.tool_calls, "tool call")) + " \u00b7 " : "";
    labels.appendChild(svgEl("text", { class: "sublabel", x: 14, y: 37 },
      excerpt(calls + (data.response || ""), chars) || (data.model ? String(data.model) : "")));
    group.appendChild(labels);
    if (kids > 1) {
      var badge = svgEl("g", { class: "badge", transform: "translate(" + shape.w + ",0)" });
      badge.appendChild(svgEl("circle", { r: 9, class: "badge-branch" }));
      badge.appendChild(svgEl("text", { class: "badge-count", "text-anchor": "middle", dy: "0.35em" }, kids));
      group.appendChild(badge);
    } else if (!kids) {
      group.appendChild(svgEl("path", {
        class: "badge-leaf",
        d: "M" + shape.w + " -6 L" + (shape.w + 6) + " 0 L" + shape.w + " 6 L" + (shape.w - 6) + " 0 Z",
      }));
    }
    if (kids) {
      var tx = topDown ? shape.w / 2 : shape.w;
      var ty = topDown ? shape.h : shape.h / 2;
      var toggle = svgEl("g", {
        class: "toggle",
        transform: "translate(" + tx + "," + ty + ")",
        "data-toggle": conversation.ids[node],
        role: "button",
        "aria-label": (open ? "Collapse" : "Expand") + " the subtree of " + conversation.ids[node],
        "aria-expanded": open ? "true" : "false",
      });
      toggle.appendChild(svgEl("circle", { r: 9 }));
      toggle.appendChild(svgEl("text", { "text-anchor": "middle", dy: "0.35em" }, open ? "\u2212" : "+"));
      group.appendChild(toggle);
      if (!open) {
        var hidden = svgEl("text", {
          class: "hidden-count",
          x: topDown ? shape.w / 2 : shape.w + 14,
          y: topDown ? shape.h + 24 : shape.h / 2 + 4,
          "text-anchor": topDown ? "middle" : "start",
        }, (conversation.size[node] - 1) + " hidden");
        group.appendChild(hidden);
      }
    }
    return group;
  }

  // Classes for selection, paths and matches, without redrawing.
  function decorate() {
    var conversation = state.conversation;
    if (!conversation) return;
    markHit(conversation);
    var onPath = new Set();
    var onPathB = new Set();
    var fork = null;
    if (state.selected !== null) conversation.path(state.selected).forEach(function (n) { onPath.add(n); });
    if (state.second !== null) {
      conversation.path(state.second).forEach(function (n) { onPathB.add(n); });
      var pathA = state.selected !== null ? conversation.path(state.selected) : [];
      var pathB = conversation.path(state.second);
      for (var k = 0; k < pathA.length && k < pathB.length && pathA[k] === pathB[k]; k++) fork = pathA[k];
    }
    drawn.nodes.forEach(function (group, node) {
      var list = group.classList;
      list.toggle("selected", node === state.selected);
      list.toggle("selected-b", node === state.second);
      list.toggle("on-path", onPath.has(node));
      list.toggle("on-path-b", onPathB.has(node) && !onPath.has(node));
      list.toggle("fork-point", node === fork);
      list.toggle("match", conversation.match[node] === 1);
      var inside = !conversation.expanded[node] && conversation.matchesBelow[node] > 0;
      list.toggle("match-inside", inside);
      var hidden = group.querySelector(".hidden-count");
      if (hidden) {
        hidden.classList.toggle("match-inside", inside);
        hidden.textContent = (conversation.size[node] - 1) + " hidden" +
          (inside ? ", " + conversation.matchesBelow[node] + " matching" : "");
      }
      group.setAttribute("aria-pressed", node === state.selected || node === state.second ? "true" : "false");
    });
    drawn.edges.forEach(function (edge, node) {
      edge.classList.toggle("on-path", onPath.has(node));
      edge.classList.toggle("on-path-b", onPathB.has(node) && !onPath.has(node));
    });
    if (scene && scene.start) {
      scene.startEdges.forEach(function (edge, root) {
        edge.classList.toggle("on-path", onPath.has(root));
        edge.classList.toggle("on-path-b", onPathB.has(root) && !onPath.has(root));
      });
      // Two branches from two roots part at the start.
      scene.start.classList.toggle("fork-point", state.second !== null && fork === null);
    }
  }

  // The hit of the selected node, in the list of hits, as the one shown.
  function markHit(conversation) {
    var list = $("hit-list");
    var before = list.querySelector("button.hit[aria-current='true']");
    var id = state.selected === null ? null : conversation.ids[state.selected];
    if (before && before.getAttribute("data-node") === id) return;
    if (before) before.setAttribute("aria-current", "false");
    if (id === null || !state.needle) return;
    var now = list.querySelector("button.hit[data-node='" + CSS.escape(id) + "']");
    if (now) {
      now.setAttribute("aria-current", "true");
      now.scrollIntoView({ block: "nearest" });
    }
  }

  // Scroll as little as it takes to show the node, then paint what came into view.
  function scrollToNode(node) {
    if (!scene || !scene.pos.has(node)) return;
    var at = scene.pos.get(node);
    var offset = drawingOffset();
    var zoom = state.zoom;
    var room = 24;
    var x1 = offset[0] + at[0] * zoom - room;
    var y1 = offset[1] + at[1] * zoom - room;
    var x2 = offset[0] + (at[0] + scene.shape.w) * zoom + room;
    var y2 = offset[1] + (at[1] + scene.shape.h) * zoom + room;
    if (x1 < canvas.scrollLeft) canvas.scrollLeft = x1;
    else if (x2 > canvas.scrollLeft + canvas.clientWidth) canvas.scrollLeft = x2 - canvas.clientWidth;
    if (y1 < canvas.scrollTop) canvas.scrollTop = y1;
    else if (y2 > canvas.scrollTop + canvas.clientHeight) canvas.scrollTop = y2 - canvas.clientHeight;
    paint();
  }

  function toggle(node) {
    var conversation = state.conversation;
    // A folded subagent opens as a click on it opens it.
    if (conversation.folded[node]) { select(node, false); return; }
    if (!conversation.children[node].length) return;
    conversation.expanded[node] = conversation.expanded[node] ? 0 : 1;
    draw();
    scrollToNode(node);
    var group = drawn.nodes.get(node);
    if (group) group.focus({ preventScroll: true });
    if (state.selected !== null) drawPanel();
  }

  // ---- Selection and the side panel ----

  function select(node, asSecond) {
    var conversation = state.conversation;
    var unfolded = conversation.reveal(node);
    if ((asSecond || state.comparing) && state.selected !== null && node !== state.selected) {
      state.second = node;
    } else {
      state.selected = node;
      state.second = null;
    }
    state.comparing = false;
    if (unfolded || !scene || !scene.pos.has(node)) draw();
    scrollToNode(node);
    decorate();
    drawPanel();
  }

  function selectId(id, asSecond) {
    var found = where.get(String(id));
    if (!found) return false;
    if (found[0] !== state.conversation) {
      if (asSecond) return false;
      show(found[0]);
    }
    select(found[1], asSecond);
    return true;
  }

  function field(list, name, value) {
    list.appendChild(el("dt", null, name));
    var dd = el("dd");
    if (value instanceof Node) dd.appendChild(value); else dd.textContent = value;
    list.appendChild(dd);
    return dd;
  }

  function textBlock(title, text, key) {
    var section = el("section");
    section.setAttribute("data-field", key);
    section.appendChild(el("h3", null, title));
    var absent = text === null || text === undefined || text === "";
    var pre = el("pre", absent ? "absent" : null, absent ? "(none)" : String(text));
    section.appendChild(pre);
    return section;
  }

  function nodeButton(conversation, node, marker) {
    var button = el("button", null, excerpt(conversation.nodes[node].prompt, 60) || conversation.ids[node]);
    button.type = "button";
    button.title = conversation.ids[node];
    button.setAttribute("data-goto", conversation.ids[node]);
    button.addEventListener("click", function () { select(node, false); });
    if (marker) button.classList.add(marker);
    return button;
  }

  // A long path shows its two ends; the middle is one line saying how much.
  var PATH_HEAD = 10;
  var PATH_TAIL = 25;

  function pathList(conversation, nodes, current) {
    var list = el("ol", "path-list");
    var skipFrom = nodes.length > PATH_HEAD + PATH_TAIL + 5 ? PATH_HEAD : nodes.length;
    var skipTo = nodes.length - PATH_TAIL;
    nodes.forEach(function (node, position) {
      if (position >= skipFrom && position < skipTo) {
        if (position === skipFrom) {
          var gap = el("li", "gap muted", "\u2026 " + plural(skipTo - skipFrom, "node") + " \u2026");
          gap.setAttribute("value", String(position + 1));
          list.appendChild(gap);
        }
        return;
      }
      var item = el("li", node === current ? "current" : null);
      if (position === skipTo) item.setAttribute("value", String(position + 1));
      item.appendChild(nodeButton(conversation, node));
      list.appendChild(item);
    });
    return list;
  }

  function actionButton(label, id, handler) {
    var button = el("button", null, label);
    button.type = "button";
    button.id = id;
    button.addEventListener("click", handler);
    return button;
  }

  function drawPanel() {
    clear(panel);
    var conversation = state.conversation;
    if (!conversation || state.selected === null) {
      panel.appendChild(el("h2", null, "Details"));
      panel.appendChild(el("p", "hint",
        "Click a node to read its prompt and response and to see its path from the root. " +
        "Shift-click a second node (or use \u201cCompare with\u2026\u201d) to see how the two branches differ."));
      panel.appendChild(el("p", "hint",
        "Click the + or \u2212 on a node\u2019s edge to expand or collapse its subtree. " +
        "Press / to search, Enter for the next match, [ and ] for the previous or next alternative, " +
        "Escape to clear the selection."));
      return;
    }
    if (state.second !== null) drawDiff(conversation); else drawDetails(conversation);
  }

  function drawDetails(conversation) {
    var node = state.selected;
    var data = conversation.nodes[node];
    var kids = conversation.children[node].length;
    panel.setAttribute("data-view", "node");
    panel.appendChild(el("h2", null, kids > 1 ? "Branch point" : kids ? "Node" : "Leaf"));
    var facts = el("dl");
    facts.id = "node-facts";
    field(facts, "Id", conversation.ids[node]).className = "mono node-id";
    var record = LINKS.nodes ? safeHref(LINKS.nodes[conversation.ids[node]]) : null;
    if (record) {
      field(facts, LINKS.nodeLabel || "Record", link(record, record)).setAttribute("data-field", "record");
    }
    field(facts, "Conversation", conversation.title());
    var model = el("span", "chip");
    var swatch = el("span", "swatch");
    swatch.style.backgroundColor = colourOf(data.model);
    model.appendChild(swatch);
    model.appendChild(document.createTextNode(data.model === null || data.model === undefined ? "unknown" : String(data.model)));
    field(facts, "Model", model).setAttribute("data-field", "model");
    field(facts, "Time", data.datetime_utc || "\u2014").setAttribute("data-field", "datetime_utc");
    field(facts, "Tokens", formatNumber(data.input_tokens) + " in, " + formatNumber(data.output_tokens) + " out")
      .setAttribute("data-field", "tokens");
    field(facts, "Duration", data.duration_ms === null || data.duration_ms === undefined
      ? "\u2014" : formatNumber(data.duration_ms) + " ms").setAttribute("data-field", "duration_ms");
    field(facts, "Depth", conversation.depth[node]);
    field(facts, "Children", kids + (kids ? " (" + (conversation.size[node] - 1) + " below)" : ""));
    var group = conversation.alternatives(node);
    if (group.length > 1) {
      field(facts, "Alternatives", (group.indexOf(node) + 1) + " of " + group.length +
        (conversation.parent[node] < 0 ? " at the start (the roots)" : "") + " \u00b7 [ and ] move")
        .setAttribute("data-field", "alternatives");
    }
    if (data.tool_calls) {
      field(facts, "Tool calls", data.tool_calls + (data.tools ? " (" + data.tools + ")" : ""))
        .setAttribute("data-field", "tool_calls");
    }
    var earlier = callsOf(data);
    if (earlier.length) {
      var listed = field(facts, "Earlier calls", earlier.join(", "));
      listed.className = "mono";
      listed.setAttribute("data-field", "calls");
    }
    if (data.source) field(facts, "Source", data.source);
    if (data.active !== undefined && data.active !== null) {
      field(facts, "Active path", data.active ? "yes (the branch last used)" : "no")
        .setAttribute("data-field", "active");
    }
    if (data.preferred) field(facts, "Preferred", "\u2605 preferred among its alternatives")
      .setAttribute("data-field", "preferred");
    panel.appendChild(facts);
    if (data.note) panel.appendChild(textBlock("Note", data.note, "note"));

    var actions = el("div", "panel-actions");
    if (group.length > 1) {
      actions.appendChild(actionButton("\u2190 Previous alternative", "sibling-prev", function () { stepAlternative(-1); }));
      actions.appendChild(actionButton("Next alternative \u2192", "sibling-next", function () { stepAlternative(1); }));
    }
    if (kids) {
      actions.appendChild(actionButton(conversation.expanded[node] ? "Collapse subtree" : "Expand subtree",
        "panel-toggle", function () { toggle(node); }));
    }
    actions.appendChild(actionButton(state.comparing ? "Now click another node\u2026" : "Compare with\u2026",
      "panel-compare", function () { state.comparing = !state.comparing; drawPanel(); }));
    panel.appendChild(actions);

    panel.appendChild(textBlock("Prompt", data.prompt, "prompt"));
    panel.appendChild(textBlock("System prompt", data.system, "system"));
    var run = runSection(data.parts);
    if (run) panel.appendChild(run);
    panel.appendChild(textBlock("Response", data.response, "response"));
    var path = conversation.path(node);
    var section = el("section");
    section.setAttribute("data-field", "path");
    section.appendChild(el("h3", null, "Path from the root (" + plural(path.length, "node") + ")"));
    section.appendChild(pathList(conversation, path, node));
    panel.appendChild(section);
  }

  // The previous or next alternative of the selected node, wrapping round
  // (the TUI's [ and ] keys).
  function stepAlternative(offset) {
    var conversation = state.conversation;
    if (!conversation || state.selected === null) return;
    var group = conversation.alternatives(state.selected);
    if (group.length < 2) return;
    var at = group.indexOf(state.selected);
    state.second = null;
    select(group[(at + offset + group.length) % group.length], false);
  }

  // JSON arguments, pretty; text that is not JSON as it is.
  function prettyJSON(value) {
    if (typeof value === "string") {
      try { value = JSON.parse(value); } catch (error) { return value; }
    }
    var text = JSON.stringify(value, null, 2);
    return text === undefined ? String(value) : text;
  }

  function partBlock(type, title, text, className) {
    var block = el("div", "part " + type.replace("_", "-"));
    block.setAttribute("data-part", type);
    block.appendChild(el("p", "part-title", title));
    if (text !== null && text !== undefined) block.appendChild(el("pre", className || null, String(text)));
    return block;
  }

  /* The node's run, part by part in order (convgraph.parts): a tool call's
   * name and arguments, a result or an error, code and its output, the
   * reasoning folded in a <details>, attachments and fragments, and what
   * the model said between two calls. Null where the node is only its
   * prompt and its response. */
  function runSection(parts) {
    if (!Array.isArray(parts) || parts.every(function (part) { return part && part.type === "text"; })) return null;
    var section = el("section");
    section.setAttribute("data-field", "run");
    section.appendChild(el("h3", null, "Run"));
    parts.forEach(function (part, index) {
      if (!part || typeof part !== "object") return;
      var name = part.name === null || part.name === undefined ? "?" : String(part.name);
      if (part.type === "text" && part.role !== "user") {
        var later = parts.slice(index + 1).some(function (next) { return next && next.type !== "text"; });
        if (later) section.appendChild(partBlock("said", "said: " + excerpt(part.text, 200)));
      } else if (part.type === "reasoning") {
        var folded = el("details", "part reasoning");
        folded.setAttribute("data-part", "reasoning");
        var thought = part.text === null || part.text === undefined ? "" : String(part.text);
        folded.appendChild(el("summary", null, part.redacted && !thought
          ? "Reasoning, kept back by the provider" : "Reasoning (" + plural(thought.length, "character") + ")"));
        if (thought) folded.appendChild(el("pre", null, thought));
        section.appendChild(folded);
      } else if (part.type === "tool_call") {
        section.appendChild(partBlock("tool_call", "\u21b3 " + name + " called with", prettyJSON(part.arguments), "code"));
      } else if (part.type === "tool_result") {
        var block = partBlock("tool_result", "\u2190 " + name + (part.error ? " failed: " + part.error : " gave back"),
          part.output === null || part.output === undefined || (part.error && !part.output)
            ? null : typeof part.output === "string" ? part.output : prettyJSON(part.output), "code");
        if (part.error) block.classList.add("failed");
        section.appendChild(block);
      } else if (part.type === "code") {
        section.appendChild(partBlock("code", "\u21b3 code ran" + (part.language ? " (" + part.language + ")" : ""),
          part.text === null || part.text === undefined ? "" : part.text, "code"));
      } else if (part.type === "code_output") {
        section.appendChild(partBlock("code_output", "\u2190 output",
          part.text === null || part.text === undefined ? "" : part.text, "code"));
      } else if (part.type === "attachment" || part.type === "fragment") {
        var about = [];
        if (part.mime) about.push(String(part.mime));
        if (typeof part.size === "number") about.push(plural(part.size, "byte"));
        section.appendChild(partBlock(part.type, part.type + ": " + (part.name || part.url || "?") +
          (about.length ? " (" + about.join(", ") + ")" : "")));
      }
    });
    return section;
  }

  function drawDiff(conversation) {
    var a = state.selected;
    var b = state.second;
    var result = branchDiff(conversation.ids[a], conversation.ids[b]);
    panel.setAttribute("data-view", "diff");
    panel.appendChild(el("h2", null, "Branch diff"));
    var facts = el("dl");
    facts.id = "diff-facts";
    field(facts, "A", conversation.ids[a]).className = "mono side-a";
    field(facts, "B", conversation.ids[b]).className = "mono side-b";
    var fork = field(facts, "Fork point", result.fork_point === null
      ? "none: the start (two alternatives of the first turn)" : result.fork_point);
    fork.setAttribute("data-field", "fork_point");
    if (result.fork_point !== null) fork.className = "mono fork";
    field(facts, "Shared", plural(result.shared.length, "node")).setAttribute("data-field", "shared");
    panel.appendChild(facts);

    var actions = el("div", "panel-actions");
    actions.appendChild(actionButton("Swap A and B", "diff-swap", function () {
      state.selected = b; state.second = a; decorate(); drawPanel();
    }));
    actions.appendChild(actionButton("Back to A", "diff-close", function () {
      state.second = null; decorate(); drawPanel();
    }));
    panel.appendChild(actions);

    var toNodes = function (ids) { return ids.map(function (id) { return conversation.indexOf.get(id); }); };
    [["Shared path", "shared", null], ["Branch A", "a", "side-a"], ["Branch B", "b", "side-b"]].forEach(function (part) {
      var section = el("section");
      section.setAttribute("data-field", "branch-" + part[1]);
      var heading = el("h3", null, part[0] + " (" + plural(result[part[1]].length, "node") + ")");
      section.appendChild(heading);
      var totals = result.totals[part[1]];
      if (totals.nodes) {
        section.appendChild(el("p", "muted totals",
          formatNumber(totals.input_tokens) + " tokens in, " + formatNumber(totals.output_tokens) +
          " out, " + formatNumber(totals.duration_ms) + " ms" +
          (totals.models.length ? " \u00b7 " + totals.models.join(", ") : "")));
      }
      if (result[part[1]].length) {
        section.appendChild(pathList(conversation, toNodes(result[part[1]]), part[1] === "a" ? a : part[1] === "b" ? b : null));
      } else {
        section.appendChild(el("p", "muted", part[1] === "shared"
          ? "Nothing: the branches differ from the first turn." : "The node is the fork point itself."));
      }
      panel.appendChild(section);
    });

    var section = el("section");
    section.setAttribute("data-field", "steps");
    section.appendChild(el("h3", null, "Step by step below the fork point"));
    if (!result.steps.length) section.appendChild(el("p", "muted", "The two nodes are the same node."));
    result.steps.forEach(function (step) {
      var block = el("div", "step");
      block.setAttribute("data-step", String(step.step));
      var title = el("p", "step-title");
      title.appendChild(el("span", null, "Step " + step.step + ": "));
      title.appendChild(el("span", "mono side-a", step.a ? step.a.id : "(none)"));
      title.appendChild(el("span", null, " vs "));
      title.appendChild(el("span", "mono side-b", step.b ? step.b.id : "(none)"));
      block.appendChild(title);
      [["Prompt", "prompt", step.same_prompt, step.prompt_diff],
        ["Response", "response", step.same_response, step.response_diff]].forEach(function (part) {
        if (part[2]) {
          block.appendChild(el("p", "muted same", part[0] + ": the same."));
          return;
        }
        block.appendChild(el("p", "diff-title", part[0]));
        block.appendChild(diffBox(part[3], part[1]));
      });
      section.appendChild(block);
    });
    panel.appendChild(section);
  }

  // Long runs of unchanged lines fold to their ends, three lines each side.
  var DIFF_CONTEXT = 3;

  function diffBox(lines, field) {
    var box = el("div", "text-diff");
    box.setAttribute("data-diff", field);
    var kinds = { " ": "equal", "-": "delete", "+": "insert" };
    var i = 0;
    while (i < lines.length) {
      if (lines[i].charAt(0) !== " ") {
        box.appendChild(el("div", kinds[lines[i].charAt(0)], lines[i].slice(1)));
        i++;
        continue;
      }
      var end = i;
      while (end < lines.length && lines[end].charAt(0) === " ") end++;
      var keepHead = i === 0 ? 0 : DIFF_CONTEXT;
      var keepTail = end === lines.length ? 0 : DIFF_CONTEXT;
      if (end - i > keepHead + keepTail + 1) {
        for (var h = i; h < i + keepHead; h++) box.appendChild(el("div", "equal", lines[h].slice(1)));
        var folded = el("div", "fold", "\u22ef " + plural(end - i - keepHead - keepTail, "unchanged line"));
        box.appendChild(folded);
        for (var t = end - keepTail; t < end; t++) box.appendChild(el("div", "equal", lines[t].slice(1)));
      } else {
        for (var k = i; k < end; k++) box.appendChild(el("div", "equal", lines[k].slice(1)));
      }
      i = end;
    }
    return box;
  }

  // ---- Search: every conversation, its hits listed by conversation ----

  // How many hits the list shows at first; "Show more" adds as many again.
  var HIT_PAGE = 100;
  // Characters of context before and after a hit in its snippet.
  var SNIPPET_BEFORE = 40;
  var SNIPPET_AFTER = 100;
  // Where the hit list goes on: [conversation index, hit index], null at the end.
  var hitCursor = null;
  var hitsShown = 0;
  var hitsFound = 0;

  function search(text) {
    var before = state.needle;
    state.needle = text.trim().toLowerCase();
    var narrow = before !== "" && state.needle.indexOf(before) >= 0;
    var total = 0;
    var inConversations = 0;
    conversations.forEach(function (conversation) {
      conversation.search(state.needle, narrow);
      total += conversation.matchCount;
      if (conversation.matchCount) inConversations++;
    });
    hitsFound = total;
    $("search-status").textContent = state.needle
      ? (total ? plural(total, "match", "matches") + " in " + plural(inConversations, "conversation") +
        " \u00b7 Enter: next" : "no match")
      : "";
    drawMatchCounts();
    drawHits();
    decorate();
  }

  function drawHits() {
    clear($("hit-list"));
    $("search-hits").hidden = !state.needle;
    hitCursor = state.needle ? [0, 0] : null;
    hitsShown = 0;
    moreHits();
  }

  // The next HIT_PAGE hits, in the order of the list of conversations.
  function moreHits() {
    var list = $("hit-list");
    var budget = HIT_PAGE;
    while (hitCursor && budget > 0) {
      var conversation = conversations[hitCursor[0]];
      if (!conversation) {
        hitCursor = null;
        break;
      }
      if (hitCursor[1] >= conversation.hits.length) {
        hitCursor = [hitCursor[0] + 1, 0];
        continue;
      }
      var group = list.lastElementChild;
      if (!group || group.getAttribute("data-conversation") !== conversation.id) {
        group = hitGroup(conversation);
        list.appendChild(group);
      }
      var items = group.querySelector("ol");
      for (; budget > 0 && hitCursor[1] < conversation.hits.length; hitCursor[1]++, budget--, hitsShown++) {
        items.appendChild(hitItem(conversation, conversation.hits[hitCursor[1]]));
      }
    }
    var left = hitsFound - hitsShown;
    var more = $("more-hits");
    more.hidden = left <= 0;
    more.textContent = left > 0 ? "Show " + Math.min(left, HIT_PAGE) + " more (" + left + " not shown)" : "";
  }

  function hitGroup(conversation) {
    var group = el("li", "hit-group");
    group.setAttribute("data-conversation", conversation.id);
    var heading = el("p", "hit-conversation");
    heading.appendChild(el("span", "hit-title", conversation.title()));
    heading.appendChild(el("span", "match-count", conversation.matchCount));
    group.appendChild(heading);
    group.appendChild(el("ol"));
    return group;
  }

  // One hit: where in the node it lies, and the words around it, marked.
  function hitItem(conversation, node) {
    var item = el("li");
    var button = el("button", "hit");
    button.type = "button";
    button.setAttribute("data-node", conversation.ids[node]);
    button.setAttribute("data-conversation", conversation.id);
    var hit = conversation.hitIn(node, state.needle);
    button.setAttribute("data-field", hit.field);
    var where = hit.field + " \u00b7 depth " + conversation.depth[node];
    if (conversation.nodes[node].active === false) where += " \u00b7 off the active path";
    button.appendChild(el("span", "hit-where", where));
    button.appendChild(snippet(hit, state.needle.length));
    button.addEventListener("click", function () { openHit(conversation, node); });
    item.appendChild(button);
    return item;
  }

  // Text around the hit on one line, the hit in <mark>; built as text nodes.
  function snippet(hit, length) {
    var box = el("span", "hit-snippet");
    var text = hit.text;
    var squeeze = function (part) { return part.replace(/\s+/g, " "); };
    if (hit.at < 0) {
      box.textContent = excerpt(text, SNIPPET_BEFORE + SNIPPET_AFTER);
      return box;
    }
    var from = Math.max(0, hit.at - SNIPPET_BEFORE);
    var to = Math.min(text.length, hit.at + length + SNIPPET_AFTER);
    // Never cut a character outside the Basic Multilingual Plane in two.
    if (from > 0 && /[\udc00-\udfff]/.test(text.charAt(from))) from--;
    if (to < text.length && /[\udc00-\udfff]/.test(text.charAt(to))) to++;
    box.appendChild(document.createTextNode((from > 0 ? "\u2026" : "") + squeeze(text.slice(from, hit.at)).replace(/^ /, "")));
    box.appendChild(el("mark", null, squeeze(text.slice(hit.at, hit.at + length))));
    box.appendChild(document.createTextNode(squeeze(text.slice(hit.at + length, to)).replace(/ $/, "") +
      (to < text.length ? "\u2026" : "")));
    return box;
  }

  function openHit(conversation, node) {
    if (conversation !== state.conversation) show(conversation);
    state.second = null;
    select(node, false);
    var group = drawn.nodes.get(node);
    if (group) group.focus({ preventScroll: true });
  }

  // Enter in the search box: open and select the next match in log order.
  function nextMatch() {
    if (!state.needle) return;
    var start = conversations.indexOf(state.conversation);
    var from = state.selected === null ? -1 : state.selected;
    for (var step = 0; step <= conversations.length; step++) {
      var conversation = conversations[(start + step) % conversations.length];
      for (var node = step === 0 ? from + 1 : 0; node < conversation.nodes.length; node++) {
        if (conversation.match[node]) {
          if (conversation !== state.conversation) show(conversation);
          state.second = null;
          select(node, false);
          return;
        }
      }
      from = -1;
    }
  }

  // ---- Events ----

  svg.addEventListener("click", function (event) {
    var target = event.target instanceof Element ? event.target : null;
    if (!target) return;
    var switcher = target.closest(".toggle");
    if (switcher) {
      var group = switcher.closest(".node");
      toggle(Number(group.getAttribute("data-index")));
      event.stopPropagation();
      return;
    }
    var node = target.closest(".node");
    if (node) select(Number(node.getAttribute("data-index")), event.shiftKey);
  });

  svg.addEventListener("keydown", function (event) {
    var target = event.target instanceof Element ? event.target.closest(".node") : null;
    if (!target) return;
    var node = Number(target.getAttribute("data-index"));
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      select(node, event.shiftKey);
    } else if (event.key === "+" || event.key === "-" || event.key === "ArrowRight" || event.key === "ArrowLeft") {
      var open = state.conversation.expanded[node] === 1;
      var wantOpen = event.key === "+" || event.key === "ArrowRight";
      if (open !== wantOpen) toggle(node);
      event.preventDefault();
    }
  });

  // Scrolling brings new parts of a large drawing into view: paint them,
  // once per frame at most.
  var paintPending = false;
  function paintSoon() {
    if (paintPending || !scene || scene.everything) return;
    paintPending = true;
    requestAnimationFrame(function () { paintPending = false; paint(); });
  }
  canvas.addEventListener("scroll", paintSoon, { passive: true });
  window.addEventListener("resize", paintSoon);

  // Drag the background to pan.
  var pan = null;
  canvas.addEventListener("pointerdown", function (event) {
    if (event.button !== 0 || (event.target instanceof Element && event.target.closest(".node"))) return;
    pan = { x: event.clientX, y: event.clientY, left: canvas.scrollLeft, top: canvas.scrollTop };
    canvas.classList.add("panning");
  });
  window.addEventListener("pointermove", function (event) {
    if (!pan) return;
    canvas.scrollLeft = pan.left - (event.clientX - pan.x);
    canvas.scrollTop = pan.top - (event.clientY - pan.y);
  });
  window.addEventListener("pointerup", function () {
    pan = null;
    canvas.classList.remove("panning");
  });

  $("more-hits").addEventListener("click", moreHits);

  var searchBox = $("search");
  var searchTimer = null;
  searchBox.addEventListener("input", function () {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(function () { search(searchBox.value); }, 120);
  });
  searchBox.addEventListener("keydown", function (event) {
    if (event.key === "Enter") {
      event.preventDefault();
      clearTimeout(searchTimer);
      if (searchBox.value.trim().toLowerCase() !== state.needle) search(searchBox.value);
      nextMatch();
    } else if (event.key === "Escape") {
      searchBox.value = "";
      search("");
    }
  });

  document.addEventListener("keydown", function (event) {
    var typing = event.target instanceof Element && event.target.closest("input, textarea");
    if (event.key === "/" && !typing) {
      event.preventDefault();
      searchBox.focus();
    } else if ((event.key === "[" || event.key === "]") && !typing) {
      event.preventDefault();
      stepAlternative(event.key === "]" ? 1 : -1);
    } else if (event.key === "Escape" && !typing) {
      state.selected = null;
      state.second = null;
      state.comparing = false;
      decorate();
      drawPanel();
    }
  });

  // The button names the drawing it switches to.
  function labelOrientation() {
    $("orientation").textContent = state.orientation === "top-down" ? "Left to right" : "Top down";
  }
  $("orientation").addEventListener("click", function () {
    state.orientation = state.orientation === "top-down" ? "left-right" : "top-down";
    labelOrientation();
    draw();
    if (state.selected !== null) scrollToNode(state.selected);
  });

  $("expand-all").addEventListener("click", function () {
    if (!state.conversation) return;
    state.conversation.expanded.fill(1);
    state.conversation.folded.fill(0);
    draw();
    if (state.selected !== null) scrollToNode(state.selected); else scrollToStart(state.conversation);
  });

  $("collapse-all").addEventListener("click", function () {
    var conversation = state.conversation;
    if (!conversation) return;
    conversation.expanded.fill(0);
    conversation.folded.set(conversation.subagent);
    state.selected = null;
    state.second = null;
    draw();
    scrollToStart(conversation);
    drawPanel();
  });

  function zoom(factor, absolute) {
    var wanted = factor === null ? 1 : absolute ? factor : state.zoom * factor;
    state.zoom = Math.min(3, Math.max(0.2, wanted));
    $("zoom-reset").textContent = Math.round(state.zoom * 100) + "%";
    draw();
    if (state.selected !== null) scrollToNode(state.selected);
  }
  $("zoom-in").addEventListener("click", function () { zoom(1.25); });
  $("zoom-out").addEventListener("click", function () { zoom(0.8); });
  $("zoom-reset").addEventListener("click", function () { zoom(null); });
  // Fit stops at a readable size: a tree wider than that scrolls, from the
  // selected node or its start (the − button zooms out further).
  $("zoom-fit").addEventListener("click", function () {
    if (!state.conversation) return;
    fitWidth(READABLE_ZOOM);
    if (state.selected !== null) scrollToNode(state.selected); else scrollToStart(state.conversation);
  });

  // ---- Start ----

  var totalNodes = conversations.reduce(function (sum, c) { return sum + c.nodes.length; }, 0);
  $("forest-stats").textContent = plural(conversations.length, "conversation") + ", " + plural(totalNodes, "node");
  labelOrientation();
  drawList();
  drawLegend(null);
  drawPanel();
  if (conversations.length) {
    show(conversations[0]);
    // A link to the page can name a node: forest.html#NODE_ID.
    var wanted = "";
    try {
      wanted = decodeURIComponent(window.location.hash.slice(1));
    } catch (error) {
      wanted = "";
    }
    if (wanted) selectId(wanted, false);
  } else {
    var empty = el("p", "empty", "This export holds no conversations.");
    canvas.appendChild(empty);
  }

  // For scripts and tests driving the page: the same answers the panel shows.
  window.convgraph = Object.freeze({
    diff: branchDiff,
    siblings: function (id) {
      var found = where.get(String(id));
      if (!found) throw new Error("unknown node");
      return found[0].siblings(found[1]).map(function (n) { return found[0].ids[n]; });
    },
    selected: function () {
      return state.selected === null ? null : state.conversation.ids[state.selected];
    },
    select: selectId,
    conversations: function () {
      return conversations.map(function (c) { return { id: c.id, name: c.name, nodes: c.nodes.length }; });
    },
    drawnNodes: function () { return svg.querySelectorAll(".node").length; },
    laidOutNodes: function () { return scene ? scene.order.length : 0; },
  });
  document.documentElement.setAttribute("data-ready", "true");
})();
