import { describe, expect, it } from 'vitest';
import { emptyForm, formToPlan, planToForm, thresholdLines, typedInt } from './planForm';
import type { PlanSpec } from './types';

const stored: PlanSpec = {
  name: 'static page',
  requests: [
    {
      name: 'index',
      method: 'GET',
      url: 'http://127.0.0.1:8090/',
      headers: { Accept: 'text/html', 'X-Trace': '1' },
      body: '',
      weight: 3,
      checks: [{ type: 'status', op: 'eq', value: 200 }],
    },
  ],
  load: { executor: 'constant-vus', vus: 10, duration: '30s', graceful_stop: '5s' },
  http: { timeout: '10s', keep_alive: false, follow_redirects: false, max_redirects: 10, insecure_skip_verify: false },
  thresholds: ['p(95)<200ms', 'error_rate<1%'],
};

describe('typedInt', () => {
  it('types whole numbers, leaves out blanks and passes anything else through for the server to name', () => {
    expect(typedInt('10')).toBe(10);
    expect(typedInt(' 007 ')).toBe(7);
    expect(typedInt('-1')).toBe(-1);
    expect(typedInt('')).toBeUndefined();
    expect(typedInt('   ')).toBeUndefined();
    expect(typedInt('1.5')).toBe('1.5');
    expect(typedInt('ten')).toBe('ten');
  });
});

describe('planToForm / formToPlan', () => {
  it('round-trips a stored plan, keeping fields the form does not show', () => {
    const form = planToForm(stored);
    expect(form.vus).toBe('10');
    expect(form.keepAlive).toBe(false);
    expect(form.requests[0].headers).toEqual([
      { key: 'Accept', value: 'text/html' },
      { key: 'X-Trace', value: '1' },
    ]);
    expect(form.thresholds).toBe('p(95)<200ms\nerror_rate<1%');
    expect(formToPlan(form)).toEqual(stored);
  });

  it('turns header rows into an object, skipping blank rows and trimming keys', () => {
    const form = emptyForm();
    form.name = '  my plan ';
    form.requests[0].headers = [
      { key: ' Accept ', value: 'application/json' },
      { key: '', value: '' },
      { key: 'X-Empty', value: '' },
    ];
    const plan = formToPlan(form);
    expect(plan.name).toBe('my plan');
    expect(plan.requests[0].headers).toEqual({ Accept: 'application/json', 'X-Empty': '' });
  });

  it('leaves headers out when there are none, and keeps a value without a key so the server reports it', () => {
    const form = emptyForm();
    expect(formToPlan(form).requests[0]).not.toHaveProperty('headers');
    form.requests[0].headers = [{ key: '', value: 'orphan' }];
    expect(formToPlan(form).requests[0].headers).toEqual({ '': 'orphan' });
  });

  it('types numbers and sends only the fields of the chosen executor', () => {
    const form = emptyForm();
    form.vus = '25';
    form.duration = '1m';
    form.iterations = '7';
    let plan = formToPlan(form);
    expect(plan.load).toEqual({ executor: 'constant-vus', vus: 25, duration: '1m' });

    form.executor = 'per-vu-iterations';
    plan = formToPlan(form);
    expect(plan.load).toEqual({ executor: 'per-vu-iterations', vus: 25, iterations: 7 });
    form.maxDuration = '2m';
    expect(formToPlan(form).load.max_duration).toBe('2m');
  });

  it('omits empty optional values and keeps keep_alive as a boolean', () => {
    const form = emptyForm();
    form.vus = '';
    form.timeout = ' ';
    form.keepAlive = false;
    form.requests[0].name = '';
    const plan = formToPlan(form);
    expect(plan.load).not.toHaveProperty('vus');
    expect(plan.http).toEqual({ keep_alive: false });
    expect(plan.requests[0]).not.toHaveProperty('name');
    expect(plan.requests[0].method).toBe('GET');
  });

  it('reads thresholds one per line, ignoring blank lines', () => {
    expect(thresholdLines(' p(95)<200ms \n\n  \nrps>10\n')).toEqual(['p(95)<200ms', 'rps>10']);
    const form = emptyForm();
    form.thresholds = 'p(99)<1s\n\nerror_rate<1%';
    expect(formToPlan(form).thresholds).toEqual(['p(99)<1s', 'error_rate<1%']);
  });

  it('fills a form from a plan missing optional parts with sensible values', () => {
    const form = planToForm({ name: 'x', requests: [{ url: 'http://127.0.0.1:1/' }], load: { vus: 1, duration: '1s' } });
    expect(form.executor).toBe('constant-vus');
    expect(form.requests[0].method).toBe('GET');
    expect(form.keepAlive).toBe(true);
    expect(form.timeout).toBe('');
    expect(form.thresholds).toBe('');
  });
});
