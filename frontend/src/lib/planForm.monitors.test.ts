import { describe, expect, it } from 'vitest';
import { mapFieldErrors } from './fieldErrors';
import { emptyForm, emptyMonitor, formSlots, formToPlan, parseLabels, planToForm, labelsText } from './planForm';
import type { PlanSpec, Loose } from './types';

const base = {
  name: 'p',
  requests: [{ name: 'GET /', method: 'GET', url: 'http://127.0.0.1:8090/', body: '', weight: 1 }],
  load: { executor: 'constant-vus', vus: 10, duration: '30s' },
  http: { timeout: '10s', keep_alive: true },
  thresholds: [],
};

describe('monitors ⇄ plan JSON', () => {
  it('round-trips stored monitors of every type, unknown keys of a monitor kept', () => {
    const monitors = [
      { name: 'host', type: 'node', url: 'http://127.0.0.1:9100/metrics', interval: '1s', timeout: '800ms' },
      { name: 'app', type: 'process', url: 'http://127.0.0.1:9256/metrics', interval: '2s', timeout: '1s', future: { x: 1 } },
      { name: 'conns', type: 'custom', url: 'http://127.0.0.1:9113/metrics', interval: '1s', timeout: '800ms', metric: 'nginx_connections_active', labels: { job: 'nginx', path: '/a,b' } },
    ];
    const spec = { ...base, monitors } as unknown as Loose<PlanSpec>;
    const form = planToForm(spec);
    expect(form.monitors.map((m) => m.type)).toEqual(['node', 'process', 'custom']);
    expect(form.monitors[1].extra).toEqual({ future: { x: 1 } });
    expect(form.monitors[2].labels).toBe('job=nginx,path=/a,b');
    expect(form.extraPlan).toEqual({});
    expect(formToPlan(form)).toEqual(spec);
    expect(JSON.stringify(formToPlan(form))).toBe(JSON.stringify(spec));
  });

  it('a new monitor is sent with its defaults left to the server; none means no monitors key', () => {
    const form = emptyForm();
    expect('monitors' in formToPlan(form)).toBe(false);
    form.monitors.push(emptyMonitor());
    expect(formToPlan(form).monitors).toEqual([{ type: 'node', url: 'http://127.0.0.1:9100/metrics' }]);
  });

  it('sends metric and labels for custom monitors only', () => {
    const form = emptyForm();
    form.monitors.push({ ...emptyMonitor(), type: 'process', metric: 'x', labels: 'a=b' });
    expect(formToPlan(form).monitors).toEqual([{ type: 'process', url: 'http://127.0.0.1:9100/metrics' }]);
    form.monitors[0].type = 'custom';
    expect(formToPlan(form).monitors).toEqual([{ type: 'custom', url: 'http://127.0.0.1:9100/metrics', metric: 'x', labels: { a: 'b' } }]);
  });

  it('edits a monitor token (a secret reference) for every type; blank means none', () => {
    const spec = { ...base, monitors: [{ type: 'process', url: 'http://10.0.0.5:9256/metrics', token: '{{secret.MON_TOKEN}}' }] } as unknown as Loose<PlanSpec>;
    const form = planToForm(spec);
    expect(form.monitors[0].token).toBe('{{secret.MON_TOKEN}}');
    expect(form.monitors[0].extra).toEqual({});
    expect(formToPlan(form)).toEqual(spec);
    form.monitors[0].token = '  ';
    expect(formToPlan(form).monitors).toEqual([{ type: 'process', url: 'http://10.0.0.5:9256/metrics' }]);
    expect(formSlots(form)).toContain('monitors[0].token');
  });

  it('keeps monitors that are not a list, and labels that are not an object, as they were', () => {
    const spec = { ...base, monitors: 'oops' } as unknown as Loose<PlanSpec>;
    expect(formToPlan(planToForm(spec)).monitors).toBe('oops');
    const spec2 = { ...base, monitors: [{ type: 'custom', url: 'http://h/', metric: 'm', labels: ['x'] }] } as unknown as Loose<PlanSpec>;
    expect(formToPlan(planToForm(spec2)).monitors).toEqual([{ type: 'custom', url: 'http://h/', metric: 'm', labels: ['x'] }]);
  });

  it('parses labels as k=v,k=v', () => {
    expect(parseLabels('')).toBeUndefined();
    expect(parseLabels(' job = nginx , state=active,')).toEqual({ job: 'nginx', state: 'active' });
    expect(parseLabels('path=/a,b,c=d')).toEqual({ path: '/a,b', c: 'd' });
    expect(parseLabels('lonely')).toEqual({ lonely: '' });
    expect(labelsText({ a: '1', b: '' })).toBe('a=1,b=');
  });

  it('maps the server’s monitor errors onto their inputs', () => {
    const form = emptyForm();
    form.monitors.push(emptyMonitor(), { ...emptyMonitor(), type: 'custom' });
    const m = mapFieldErrors(
      {
        'monitors[0].url': 'must be an http:// or https:// URL',
        'monitors[0].interval': 'must be 500ms–1m0s',
        'monitors[0].metric': 'metric and labels are for custom monitors only',
        'monitors[1].labels': '"1x" is not a label name',
        'monitors[1].metric': 'needs a metric',
        monitors: 'at most 8 monitors',
      },
      formSlots(form),
    );
    expect(Object.keys(m.bySlot).sort()).toEqual(['monitors', 'monitors[0]', 'monitors[0].interval', 'monitors[0].url', 'monitors[1].labels', 'monitors[1].metric']);
    expect(m.unmatched).toEqual([]);
  });
});
