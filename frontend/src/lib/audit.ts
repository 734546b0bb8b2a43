// The audit log's detail column: a run's plan and target hosts first, then any other field.

/** detailText: "plan (#id) → host1, host2", then key=value for other fields (run_id is in the target). */
export function detailText(d: Record<string, unknown> | null | undefined): string {
  if (!d) return '';
  const parts: string[] = [];
  if (d.plan_name !== undefined) parts.push(`${String(d.plan_name)} (#${String(d.plan_id)})`);
  if (Array.isArray(d.hosts)) parts.push(`→ ${d.hosts.map(String).join(', ')}`);
  for (const [k, v] of Object.entries(d)) {
    if (k !== 'plan_name' && k !== 'plan_id' && k !== 'hosts' && k !== 'run_id') parts.push(`${k}=${String(v)}`);
  }
  return parts.join(' ');
}
