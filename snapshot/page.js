// The accessibility tree computed in the page, the default source of a
// non-verbose snapshot (page.go). It runs in an isolated world of its own,
// where the page's scripts can neither see it nor change the DOM functions
// it calls, and returns the tree as one flat array, seven values a node, in
// pre-order:
//
//   ref, role, name, value, description, props, number of children
//
// ref numbers the DOM node within its document and stays its number for
// every later snapshot of the document: refs.get(ref) gives the node back
// (PageNodeScript); 0 is a node without a DOM node of its own (text of CSS
// ::before and ::after). name, value and description are strings or null;
// props is null or a flat array of property names and values. Roles, names
// and properties are spelled as Chrome's Accessibility.getFullAXTree
// spells them, and follow its rules where a snapshot's text shows them
// (which text layout drops, names from content, titles, generated
// content). Where Chrome's rules are more than the script can be sure of
// (ARIA widgets and states, form controls and their user-agent shadow
// trees, media, some lone spaces) it leaves a hole that the caller fills
// with Chrome's own subtree (holes.go); the document goes to Chrome's tree
// with aria-owns or too many holes. An iframe's document is the caller's
// too. Not seen: a closed shadow root of a page's own element. The walk
// recurses: a document some 2,000 elements deep overflows its stack, and
// the caller takes Chrome's tree.
(() => {
  // The refs of the document, kept in this world's global: a node's ref
  // goes when the node is collected, so that a page that keeps replacing
  // its content does not grow the map.
  const S = globalThis.__pagemuxSnap || (globalThis.__pagemuxSnap = { ids: new WeakMap(), refs: new Map(), next: 0 });
  // A bound function, not a closure: a closure would keep this run's
  // scope, and every element it held, alive as long as the registry.
  S.gone = S.gone || new FinalizationRegistry(Map.prototype.delete.bind(S.refs));
  const out = [];
  const fields = 7;
  const maxHoles = 2000;
  const refOf = (n) => {
    let id = S.ids.get(n);
    if (id === undefined) {
      id = ++S.next;
      S.ids.set(n, id);
      S.refs.set(id, new WeakRef(n));
      S.gone.register(n, id);
    }
    return id;
  };
  const collapse = (s) => s.replace(/[ \t\n\r\f]+/g, ' ');
  const norm = (s) => collapse(s).trim();

  // Implicit roles, by tag; a function when it depends on the element.
  const landmarkScope = 'article,aside,main,nav,section';
  const implicit = {
    a: (e) => (e.hasAttribute('href') ? 'link' : 'generic'),
    area: (e) => (e.hasAttribute('href') ? 'link' : 'generic'),
    abbr: 'Abbr', address: 'group', article: 'article', aside: 'complementary',
    b: 'generic', bdi: 'generic', bdo: 'generic', blockquote: 'blockquote', body: 'generic',
    br: 'LineBreak', button: 'button', canvas: 'Canvas', caption: 'caption', code: 'code',
    data: 'generic', datalist: 'listbox', dd: 'definition', del: 'deletion', details: 'group',
    dfn: 'term', dialog: 'dialog', div: 'generic', dl: 'list', dt: 'term', em: 'emphasis',
    fieldset: 'group', figcaption: 'Figcaption', figure: 'figure',
    footer: (e) => (e.parentElement && e.parentElement.closest(landmarkScope) ? 'generic' : 'contentinfo'),
    form: 'form',
    h1: 'heading', h2: 'heading', h3: 'heading', h4: 'heading', h5: 'heading', h6: 'heading',
    header: (e) => (e.parentElement && e.parentElement.closest(landmarkScope) ? 'generic' : 'banner'),
    hgroup: 'group', hr: 'separator', i: 'generic', iframe: 'Iframe', img: (e) => (e.getAttribute('alt') === '' ? 'none' : 'image'),
    ins: 'insertion', kbd: 'generic', label: 'LabelText', legend: 'legend',
    li: 'listitem', main: 'main', mark: 'mark', menu: 'list', nav: 'navigation',
    ol: 'list', optgroup: 'group', option: 'option', p: 'paragraph', pre: 'generic', q: 'generic', s: 'deletion', samp: 'generic', search: 'search',
    section: (e) => (e.hasAttribute('aria-label') || e.hasAttribute('aria-labelledby') || e.hasAttribute('title') ? 'region' : 'generic'),
    small: 'generic', span: 'generic', strong: 'strong', sub: 'subscript', summary: 'DisclosureTriangle',
    sup: 'superscript', svg: 'image', table: 'table', tbody: 'rowgroup', td: 'cell',
    tfoot: 'rowgroup', th: (e) => (e.closest('thead') || e.scope === 'col' ? 'columnheader' : 'rowheader'),
    thead: 'rowgroup', time: 'time', tr: 'row', u: 'generic', ul: 'list',
  };
  // An element walked has no role attribute but one of plainRoles (any
  // other makes it a hole).
  const roleOf = (e, tag) => {
    const attr = e.getAttribute('role');
    if (attr !== null) return attr.trim();
    const r = implicit[tag];
    return typeof r === 'function' ? r(e) : r || 'generic';
  };
  // Roles whose name comes from their content, as the accname spec has it.
  const fromContent = new Set(['button', 'cell', 'checkbox', 'columnheader', 'gridcell', 'heading', 'link', 'menuitem',
    'menuitemcheckbox', 'menuitemradio', 'option', 'radio', 'row', 'rowheader', 'switch', 'tab', 'tooltip', 'treeitem',
    'DisclosureTriangle', 'LabelText', 'legend', 'caption', 'Figcaption', 'term']);
  // Roles that take no name from a title: it becomes their description.
  const unnamed = new Set(['generic', 'none', 'Ignored', 'paragraph', 'code', 'emphasis', 'strong', 'deletion', 'insertion',
    'subscript', 'superscript', 'caption', 'StaticText', 'LineBreak', 'time', 'mark', 'term', 'definition']);
  // The name of e when it does not come from its content.
  const ownName = (e, tag) => {
    const al = e.getAttribute('aria-label');
    if (al && al.trim()) return al.trim();
    switch (tag) {
      case 'img': {
        const alt = e.getAttribute('alt');
        if (alt) return norm(alt);
        break;
      }
      case 'fieldset': {
        const lg = e.querySelector(':scope > legend');
        if (lg) return norm(lg.textContent);
        break;
      }
      case 'figure': {
        const c = e.querySelector(':scope > figcaption');
        if (c) return norm(c.textContent);
        break;
      }
      case 'table': {
        if (e.caption) return norm(e.caption.textContent);
        break;
      }
      case 'iframe': case 'svg': {
        const t = tag === 'svg' ? e.querySelector(':scope > title') : null;
        if (t) return norm(t.textContent);
        break;
      }
    }
    return null;
  };

  const inert = new Set(['script', 'style', 'noscript', 'template', 'head', 'meta', 'link', 'title', 'base', 'param', 'source', 'track']);
  const active = document.activeElement;
  // spaced says the text laid out last ends a line or in white space, so
  // that white space after it is dropped.
  let spaced = true;
  // afterControl says the box laid out last is a form control, after which
  // Chrome shows no lone space.
  let afterControl = false;
  const controlTags = new Set(['input', 'select', 'textarea', 'button']);
  const leaves = new Set(['img', 'input', 'select', 'textarea', 'button', 'svg', 'iframe', 'video', 'audio', 'canvas']);

  // A name from content is its text as layout has it, white space
  // collapsed, blocks set apart by a space.
  const pad = '\u0001';
  const contentName = (t) => collapse(t.replace(/^[\s\u0001]+|[\s\u0001]+$/g, (m) => (m.includes(pad) ? '' : m)).replace(/\u0001+/g, ' '));

  // style is e's computed style, read once a snapshot: siblings of text
  // are asked for theirs again and again. Its box's display and whether it
  // is out of the flow are read once too.
  const styles = new Map();
  const style = (e) => {
    let s = styles.get(e);
    if (s === undefined) {
      const cs = getComputedStyle(e);
      s = { cs, display: cs.display, position: undefined, float: undefined };
      styles.set(e, s);
    }
    return s;
  };
  const positioned = (s) => {
    if (s.position === undefined) s.position = s.cs.position === 'absolute' || s.cs.position === 'fixed';
    return s.position;
  };
  const floating = (s) => {
    if (s.float === undefined) s.float = s.cs.cssFloat !== 'none';
    return s.float;
  };

  // generators holds the elements that may have CSS generated content:
  // those a rule of ::before or ::after in the document's style sheets
  // could match, found by the selector engine at once with the
  // pseudo-element taken off the selector, and the q elements of Chrome's
  // own style sheet. null (every element may) when a sheet cannot be read
  // (one of another origin), or a rule is more than that simple reading
  // can be sure of (nested rules, @scope, a pseudo-element left). A sheet
  // whose load failed (a 404, which Chrome does not let scripts read
  // either) has no rules. Elements in shadow trees, whose style sheets are
  // their own, are always asked.
  const generators = (() => {
    const sels = ['q'];
    const pseudoEl = /::?(?:before|after)\b/gi;
    const read = (rules) => {
      for (const r of rules) {
        if (r.styleSheet !== undefined) { // @import
          if (r.styleSheet && !read(r.styleSheet.cssRules)) return false;
          continue;
        }
        const t = r.selectorText;
        if (t !== undefined && !r.cssRules?.length) {
          if (!pseudoEl.test(t)) continue;
          pseudoEl.lastIndex = 0;
          const sel = t.replace(pseudoEl, ':where(*)');
          if (sel.includes('::')) return false;
          sels.push(sel);
          continue;
        }
        if (typeof CSSScopeRule === 'function' && r instanceof CSSScopeRule) return false;
        if (r.cssRules?.length) {
          if (t !== undefined && pseudoEl.test(r.cssText)) return false; // nested
          pseudoEl.lastIndex = 0;
          if (!read(r.cssRules)) return false;
        }
      }
      return true;
    };
    // failed reports whether the load of the sheet at href failed, as the
    // page's resource timing says: it has no rules.
    const failed = (href) => {
      const t = href && performance.getEntriesByName(href, 'resource')[0];
      return !!t && t.responseStatus >= 400;
    };
    try {
      for (const sh of [...document.styleSheets, ...document.adoptedStyleSheets]) {
        let rules;
        try {
          rules = sh.cssRules;
        } catch (err) {
          if (failed(sh.href)) continue;
          throw err;
        }
        if (!read(rules)) return null;
      }
      return new Set(document.querySelectorAll(sels.join(',')));
    } catch {
      return null; // a sheet of another origin, a selector of no meaning here
    }
  })();
  // shadowDepth counts the shadow trees the walk is in.
  let shadowDepth = 0;
  const generates = (e) => generators === null || shadowDepth > 0 || generators.has(e);

  // pseudo emits the text CSS generates before or after e's content, as a
  // node without a DOM node of its own (ref 0), and returns it. Quoted
  // strings and attr() are read; counters and images are not.
  let counted = false;
  // Its white space is laid out as a text node's at its place would be:
  // dropped at the start and end of a line and after white space; kids
  // are e's children, inline whether e is an inline box.
  const pseudo = (e, which, kids, inline) => {
    if (!generates(e)) return '';
    const st = getComputedStyle(e, which);
    let c = st.content;
    if (c === 'none' || c === 'normal' || c === '' || st.visibility !== 'visible') return '';
    // A box of its own (inline-block) is no text: Chrome shows no lone
    // space beside it.
    if (st.display !== 'inline') afterControl = true;
    // CSS counters are Chrome's to count (walk makes e a hole).
    if (c.includes('counter')) counted = true;
    c = c.replace(/url\((?:"(?:[^"\\]|\\.)*"|[^)]*)\)/g, '').replace(/\bopen-quote\b/g, '"\u201c"').replace(/\bclose-quote\b/g, '"\u201d"');
    let t = '';
    for (const m of c.matchAll(/"((?:[^"\\]|\\.)*)"|attr\(([^)]+)\)/g)) {
      t += m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : e.getAttribute(m[2].trim()) || '';
    }
    t = collapse(t);
    if (t === '' || t === ' ') return '';
    const box = st.display !== 'inline';
    if (spaced || box) t = t.replace(/^ /, '');
    let ends = box;
    if (!ends && which === '::before') {
      const next = inFlow(kids, -1);
      ends = !!next && breaks(next);
    } else if (!ends) {
      ends = !inline || endsLine(e);
    }
    if (ends) t = t.replace(/ $/, '');
    if (t === '') return '';
    out.push(0, 'StaticText', t, null, null, null, 0);
    spaced = t.endsWith(' ');
    return pad + t + pad; // Chrome's names set it apart from the content
  };

  // breaks reports whether a sibling of a text node ends a line: a block,
  // or a line break.
  const breaks = (n) => {
    if (n.nodeType !== 1) return false;
    if (n.localName === 'br') return true;
    const s = style(n);
    // A box out of the flow (positioned, floating) is not on the line.
    if (positioned(s) || floating(s)) return false;
    const d = s.display;
    return d !== 'none' && d !== 'contents' && !d.startsWith('inline');
  };

  // transformed is text as CSS text-transform lays it out, as Chrome's
  // names have it.
  const transformed = (s, how) => {
    switch (how) {
      case 'uppercase': return s.toUpperCase();
      case 'lowercase': return s.toLowerCase();
      case 'capitalize': return s.replace(/(^|[\s\p{P}])(\p{L})/gu, (m, a, b) => a + b.toUpperCase());
    }
    return s;
  };

  // sibling is the nearest sibling of kids[i] in direction dir that layout
  // sees: not a comment, nor white space.
  const sibling = (kids, i, dir) => {
    for (i += dir; i >= 0 && i < kids.length; i += dir) {
      if (laidOut(kids[i])) return kids[i];
    }
    return null;
  };
  // laidOut reports whether layout puts k on the line: not a comment, nor
  // white space, nor an empty inline box.
  const laidOut = (k) => {
    if (k.nodeType === 3) return /[^ \t\n\r\f]/.test(k.data);
    if (k.nodeType !== 1 || inert.has(k.localName)) return false;
    return boxOnLine(k, style(k).display);
  };
  // boxOnLine reports whether element k, of display d, puts a box on the
  // line: it is shown, and not an empty inline box.
  const boxOnLine = (k, d) => {
    if (d === 'none') return false;
    return !(d === 'inline' && !k.firstChild && k.localName !== 'br' && !leaves.has(k.localName) && !controlTags.has(k.localName) &&
      (!generates(k) || (getComputedStyle(k, '::before').content === 'none' && getComputedStyle(k, '::after').content === 'none')));
  };

  // inFlow is the nearest sibling after kids[i] that layout puts on the
  // line: a box out of the flow (positioned) is not on it.
  const inFlow = (kids, i) => {
    for (i++; i < kids.length; i++) {
      const k = kids[i];
      if (k.nodeType === 3) {
        if (/[^ \t\n\r\f]/.test(k.data)) return k;
        continue;
      }
      if (k.nodeType !== 1 || inert.has(k.localName)) continue;
      const s = style(k);
      if (!positioned(s) && boxOnLine(k, s.display)) return k;
    }
    return null;
  };

  // endsLine reports whether nothing follows the inline element e on its
  // line: what follows it, or its inline ancestors, is a block or a line
  // break, or the end of their block.
  const endsLine = (e) => {
    for (let c = e; c && c.parentNode; c = c.parentNode) {
      let next = c.nextSibling;
      while (next && !laidOut(next)) next = next.nextSibling;
      if (next) return breaks(next);
      const p = c.parentNode;
      if (p.nodeType !== 1 || !style(p).display.startsWith('inline')) return true;
    }
    return true;
  };

  // startsWithControl reports whether the first thing in element n is a
  // form control.
  const startsWithControl = (n) => {
    for (let c = n; c && c.nodeType === 1; c = sibling(c.childNodes, -1, 1)) {
      if (controlTags.has(c.localName)) return true;
    }
    return false;
  };

  // endsWithControl reports whether the last thing in element n is a form
  // control, or n is one.
  const endsWithControl = (n) => {
    for (let c = n; c && c.nodeType === 1; c = sibling(c.childNodes, c.childNodes.length, -1)) {
      if (controlTags.has(c.localName)) return true;
    }
    return false;
  };

  // textual reports whether a sibling n is text, or an inline box of it.
  // A box CSS generates on the side that faces the space counts as n's:
  // one of its own (inline-block) is not text.
  const textual = (n, dir) => {
    if (!n || n.nodeType === 3) return true;
    if (controlTags.has(n.localName) || style(n).display !== 'inline') return false;
    if (!generates(n)) return true;
    const st = getComputedStyle(n, dir > 0 ? '::before' : '::after');
    return st.content === 'none' || st.content === 'normal' || st.display === 'inline';
  };

  // Holes: elements whose tree the script does not compute, because
  // Chrome's rules for them are more than the script can be sure of (ARIA
  // widgets and states, form controls with their user-agent shadow trees,
  // media, editing hosts, a hidden box with children that may show). Such
  // an element is one node of role "#hole" without children; the caller
  // asks Chrome for its subtree (Accessibility.queryAXTree) and puts it in
  // the hole's place. An element whose name comes from its content becomes
  // a hole itself when a hole is inside it.
  const holes = [];
  const holeTags = new Set(['input', 'select', 'textarea', 'meter', 'progress', 'output', 'video', 'audio', 'dialog',
    'datalist', 'object', 'embed', 'canvas', 'map', 'area', 'math', 'marquee', 'fencedframe', 'portal', 'selectedcontent']);
  // Roles a plain container may take that change nothing but the role
  // (landmarks, lists): the script writes them as Chrome does, and a page
  // that wraps its whole content in role=main stays the script's.
  const plainRoles = new Set(['main', 'navigation', 'banner', 'contentinfo', 'complementary', 'search', 'article', 'list', 'listitem', 'paragraph', 'generic']);
  const plainTags = new Set(['div', 'span', 'section', 'header', 'footer', 'nav', 'aside', 'main', 'article', 'p', 'ul', 'ol', 'li']);
  // The ARIA attributes that make an element a hole: all but those the
  // script writes as Chrome does (aria-label), those no snapshot shows
  // (aria-controls, aria-flowto) and those it reads elsewhere (aria-hidden,
  // aria-owns). An attribute ARIA does not define changes nothing.
  const ariaAttrs = new Set(('activedescendant atomic autocomplete braillelabel brailleroledescription busy checked colcount ' +
    'colindex colindextext colspan current describedby description details disabled dropeffect errormessage expanded grabbed ' +
    'haspopup invalid keyshortcuts labelledby level live modal multiline multiselectable orientation placeholder posinset ' +
    'pressed readonly relevant required roledescription rowcount rowindex rowindextext rowspan selected setsize sort ' +
    'valuemax valuemin valuenow valuetext').split(' ').map((a) => 'aria-' + a));
  // marked holds the elements with an attribute that may make them holes,
  // found by the selector engine at once rather than by reading every
  // element's attributes (markIn).
  const markSelector = ['[role]', '[contenteditable]', '[popover]', ...[...ariaAttrs].map((a) => '[' + a + ']')].join(',');
  const marked = new Set();
  const markIn = (root) => {
    for (const e of root.querySelectorAll(markSelector)) marked.add(e);
  };
  const isHole = (e, tag, cs) => {
    if (holeTags.has(tag)) return !(tag === 'input' && e.type === 'hidden');
    if (tag === 'label' && e.control) return true;
    // An exclusive accordion's summary, and SVG text and links.
    if (tag === 'details' && e.hasAttribute('name')) return true;
    if (tag === 'svg' && e.querySelector('text,a,foreignObject')) return true;
    if (marked.has(e)) {
      const r = e.getAttribute('role');
      if (r === null || !(plainRoles.has(r.trim()) && plainTags.has(tag))) return true;
      for (const a of ariaAttrs) if (e.hasAttribute(a)) return true;
      if (e.hasAttribute('contenteditable') || e.hasAttribute('popover')) return true;
    }
    // Chrome shows what is visible in a hidden box.
    if (cs.visibility !== 'visible' && e.firstElementChild) return true;
    return false;
  };
  // nearControl reports whether a sibling n of a space is a form control,
  // beside which Chrome's rules for the space are its own.
  const nearControl = (n) => !!n && n.nodeType === 1 && (controlTags.has(n.localName) || holeTags.has(n.localName));
  // hole emits e as a hole, for the caller to fill.
  const hole = (e) => {
    holes.push(e);
    out.push(refOf(e), '#hole', null, null, null, null, 0);
  };
  // gap emits a text node of white space as a hole that Chrome may leave
  // empty: whether it shows a lone space there.
  const gap = (t) => {
    holes.push(t);
    out.push(refOf(t), '#gap', null, null, null, null, 0);
  };

  // holeAt emits e as a hole and sets the state of the line after it as an
  // element of its kind does. It adds no text to an ancestor's name: an
  // ancestor named from its content becomes a hole too (walk).
  const holeAt = (e, tag, inline) => {
    hole(e);
    spaced = !inline;
    afterControl = endsWithControl(e);
    return '';
  };

  // walk emits e and its subtree and returns the text e adds to an
  // ancestor's name from content.
  // A node hidden by visibility is left out with all below it, even a
  // child made visible again.
  const walk = (e) => {
    const tag = e.localName;
    if (inert.has(tag)) return '';
    if (tag === 'wbr') return ' '; // Chrome's names have a space there
    if (e.getAttribute('aria-hidden') === 'true' || e.inert) {
      spaced = false; // still laid out, most likely
      return '';
    }
    const st = style(e);
    const cs = st.cs;
    if (st.display === 'none' || cs.contentVisibility === 'hidden') return '';
    if (tag === 'input' && e.type === 'hidden') return '';
    const inline = st.display.startsWith('inline') || st.display === 'contents';
    if (isHole(e, tag, cs)) return holeAt(e, tag, inline);
    if (cs.visibility !== 'visible') return '';
    const role = roleOf(e, tag);
    const base = out.length;
    let value = null;
    let desc = null;
    out.push(refOf(e), role, null, null, null, null, 0);
    const own = tag === 'br' ? '\n' : ownName(e, tag);
    let name = own;
    const holesBefore = holes.length;
    // The children: e's shadow tree, a slot's assigned nodes, else its own.
    let kids = e.childNodes;
    if (e.shadowRoot) {
      markIn(e.shadowRoot);
      kids = e.shadowRoot.childNodes;
    }
    else if (tag === 'slot') {
      const a = e.assignedNodes();
      if (a.length) kids = a;
    }
    let text = '';
    let count = 0;
    const pre = cs.whiteSpace.startsWith('pre') || cs.whiteSpace === 'break-spaces';
    const boxed = /flex|grid/.test(st.display);
    const transform = cs.textTransform;

    if (!inline || tag === 'br') spaced = true;
    if (tag === 'iframe') {
      // A frame's document is a tree of its own, which the caller adds
      // under this node, whatever process the frame is in.
    } else if (tag === 'svg' || tag === 'img') {
      // Leaves: what is inside is not shown.
    } else {
      // A shadow host's generated content, and its shadow tree's, come
      // from the tree's own style sheets too.
      const shadow = e.shadowRoot ? 1 : 0;
      shadowDepth += shadow;
      counted = false;
      text += pseudo(e, '::before', kids, inline);
      const countedBefore = counted;
      if (out.length > base + fields) count++;
      // A closed details element shows its summary only.
      const summary = tag === 'details' && !e.open ? e.querySelector(':scope > summary') : undefined;
      const n = kids.length;
      for (let i = 0; i < n; i++) {
        const c = kids[i];
        if (summary !== undefined && c !== summary) continue;
        const before = out.length;
        if (c.nodeType === 1) {
          text += walk(c);
        } else if (c.nodeType === 3) {
          let s = c.data;
          if (!pre) {
            // Layout drops white space at the start and end of a line, and
            // after white space, and makes a run of it one space; a flex
            // or grid item (text in such a box is one) starts and ends a
            // line of its own.
            s = collapse(s);
            const blank = s === ' ';
            if (spaced || boxed) s = s.replace(/^[ \t\n\r\f]+/, '');
            const next = inFlow(kids, i);
            if (boxed || (next ? breaks(next) : !inline || endsLine(e))) s = s.replace(/[ \t\n\r\f]+$/, '');
            // A lone space shows between two inline boxes of text only,
            // and Chrome's rules for it are more than these: Chrome says
            // whether it shows one kept here, or one dropped at an edge of
            // an inline box.
            if (s === '' || (s === ' ' && (afterControl || !next || !textual(next, 1) || !textual(sibling(kids, i, -1), -1) || startsWithControl(next)))) {
              if (blank) {
                const prev = sibling(kids, i, -1);
                if ((inline && !boxed && (!next || !prev)) || nearControl(prev) || nearControl(next)) gap(c), count++;
              }
              continue;
            }
            if (blank) {
              gap(c), count++;
              spaced = true, afterControl = false;
              text += ' ';
              continue;
            }
          }
          if (s === '') continue;
          if (transform !== 'none') s = transformed(s, transform);
          spaced = pre ? s.endsWith('\n') : s.endsWith(' ');
          afterControl = false;
          text += s;
          out.push(refOf(c), 'StaticText', s, null, null, null, 0);
        }
        if (out.length > before) count++;
      }
      const before = out.length;
      counted = false;
      text += pseudo(e, '::after', kids, inline);
      shadowDepth -= shadow;
      if (out.length > before) count++;
      if (countedBefore || counted) {
        out.length = base;
        holes.length = holesBefore;
        return holeAt(e, tag, inline);
      }
    }
    out[base + 6] = count;
    if (holes.length > holesBefore && own === null && (fromContent.has(role) || (e.title && !unnamed.has(role)))) {
      // The name would take in a hole's text: Chrome's subtree it is.
      out.length = base;
      holes.length = holesBefore;
      return holeAt(e, tag, inline);
    }
    if (!inline || tag === 'br') spaced = true;
    else if (leaves.has(tag)) spaced = false;
    if (controlTags.has(tag)) afterControl = true;
    else if (leaves.has(tag)) afterControl = false;
    if (name === null && fromContent.has(role)) name = contentName(text) || null;
    const title = e.title ? norm(e.title) : '';
    if (name === null && title && !unnamed.has(role)) name = title;
    if (tag === 'img') text = name || '';
    else if (e.hasAttribute('aria-label')) text = name;
    // A block's text is apart from its neighbours' (pad, cut again by
    // contentName).
    if (!inline && text) text = pad + text + pad;
    if (name !== null) out[base + 2] = name;

    const p = [];
    const focusable = e.hasAttribute('tabindex') || e.isContentEditable || (focusTags[tag] !== undefined && focusTags[tag](e));
    const disabled = formTags.has(tag) && e.matches(':disabled');
    if (disabled) p.push('disabled', true);
    else if (focusable) p.push('focusable', true);
    if (e === active && focusable) p.push('focused', true);
    if (e.isContentEditable) {
      p.push('editable', 'richtext');
      // An editing host's value is its text.
      if (!e.parentElement || !e.parentElement.isContentEditable) value = contentName(text).trim();
    }
    switch (role) {
      case 'link':
        if (e.href) p.push('url', e.href);
        break;
      case 'image':
        if (tag === 'img' && e.currentSrc) p.push('url', e.currentSrc);
        break;
      case 'heading':
        p.push('level', tag.length === 2 && tag[0] === 'h' ? +tag[1] : 2);
        break;
      case 'option': // outside a select, which is a hole
        p.push('selected', e.selected);
        break;
      case 'separator':
        p.push('orientation', 'horizontal');
        break;
    }
    if (tag === 'details' || tag === 'summary') {
      const d = tag === 'details' ? e : e.parentElement;
      if (d && d.localName === 'details') p.push('expanded', d.open);
    }
    if (title && name !== title) desc = title;
    else if (title && own !== null) desc = title; // the name came from elsewhere
    if (p.length) out[base + 5] = p;
    if (value !== null) out[base + 3] = value;
    if (desc !== null) out[base + 4] = desc;
    return text;
  };
  // Elements focusable without a tabindex.
  const yes = () => true;
  const focusTags = {
    a: (e) => e.hasAttribute('href'), button: yes, iframe: yes,
    summary: (e) => e.parentElement && e.parentElement.localName === 'details',
  };
  const formTags = new Set(['button', 'input', 'select', 'textarea', 'option', 'optgroup', 'fieldset']);
  // rootOf emits a document's RootWebArea and its body.
  const rootOf = (doc) => {
    const base = out.length;
    out.push(refOf(doc), 'RootWebArea', norm(doc.title), null, null, ['focusable', true, 'url', doc.URL], 0);
    walk(doc.body);
    out[base + 6] = out.length > base + fields ? 1 : 0;
  };
  // A document without an HTML body (SVG, XML, a frameset) is left to
  // Chrome's tree.
  if (!document.body || document.body.localName !== 'body') return null;
  // aria-owns moves nodes across the tree: Chrome's tree it is.
  if (document.querySelector('[aria-owns]')) return null;
  markIn(document);
  rootOf(document);
  S.holes = holes;
  // Filling many holes costs more than Chrome's whole tree.
  if (holes.length > maxHoles) return null;
  return out;
})()
