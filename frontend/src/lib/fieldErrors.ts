// Maps the field paths of a 400 invalid_plan answer (`requests[0].url`, `load.vus`, `thresholds[1]`,
// `requests[0].headers.X-Foo`) onto the inputs the form shows. A path goes to the input with the same
// path, or else to the nearest enclosing path that has an input; paths with no input at all are
// returned as unmatched so the banner can list them.

export interface FieldProblem {
  path: string;
  message: string;
}

export interface MappedErrors {
  /** Problems by the input (slot) they belong next to. */
  bySlot: Record<string, FieldProblem[]>;
  /** Problems with no input in the form (unknown fields, fields the form does not show, ""). */
  unmatched: FieldProblem[];
}

/** parentPath strips the last segment: `a.b[2]` → `a.b`, `a.b` → `a`, `a` → null. */
export function parentPath(path: string): string | null {
  const m = /^(.*?)(\[\d+\]|\.[^.[\]]+)$/.exec(path);
  if (!m || m[1] === '') return null;
  return m[1];
}

export function mapFieldErrors(fields: Record<string, string> | undefined, slots: Iterable<string>): MappedErrors {
  const known = new Set(slots);
  const out: MappedErrors = { bySlot: {}, unmatched: [] };
  for (const [path, message] of Object.entries(fields ?? {})) {
    let p: string | null = path;
    while (p !== null && !known.has(p)) p = parentPath(p);
    if (p === null || path === '') {
      out.unmatched.push({ path, message });
    } else {
      (out.bySlot[p] ??= []).push({ path, message });
    }
  }
  const byPath = (a: FieldProblem, b: FieldProblem) => a.path.localeCompare(b.path, 'en', { numeric: true });
  for (const list of Object.values(out.bySlot)) list.sort(byPath);
  out.unmatched.sort(byPath);
  return out;
}
