import { describe, expect, it } from 'vitest';
import {
  EXECUTORS,
  EXECUTOR_FIELDS,
  emptyForm,
  fmtSpan,
  formSlots,
  formToPlan,
  levelLabel,
  loadSummary,
  parseGoDuration,
  parseLevels,
  planToForm,
  thresholdLines,
  typedInt,
} from './planForm';
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

describe('executor ⇄ load JSON', () => {
  // What the server stores for each executor (defaults filled), as GET /api/plans/:id returns it.
  const stored: Record<string, Record<string, unknown>> = {
    'constant-vus': { executor: 'constant-vus', vus: 10, duration: '30s', graceful_stop: '5s' },
    'ramping-vus': {
      executor: 'ramping-vus',
      start_vus: 2,
      stages: [
        { duration: '10s', target: 20 },
        { duration: '1m0s', target: 20 },
        { duration: '10s', target: 0 },
      ],
      graceful_stop: '5s',
    },
    'per-vu-iterations': { executor: 'per-vu-iterations', vus: 4, iterations: 50, max_duration: '10m0s', graceful_stop: '5s' },
    'shared-iterations': { executor: 'shared-iterations', vus: 8, iterations: 1000, max_duration: '2m0s', graceful_stop: '5s' },
    'constant-arrival-rate': {
      executor: 'constant-arrival-rate',
      rate: 200,
      time_unit: '1s',
      duration: '8s',
      pre_allocated_vus: 5,
      max_vus: 50,
      graceful_stop: '5s',
    },
    'ramping-arrival-rate': {
      executor: 'ramping-arrival-rate',
      start_rate: 10,
      time_unit: '1s',
      stages: [
        { duration: '5s', target: 100 },
        { duration: '5s', target: 0 },
      ],
      pre_allocated_vus: 5,
      max_vus: 20,
      graceful_stop: '1s',
    },
    'concurrency-sweep': { executor: 'concurrency-sweep', levels: [1, 5, 20], step_duration: '3s', graceful_stop: '5s' },
  };

  const planWith = (load: Record<string, unknown>): PlanSpec => ({
    name: 'p',
    requests: [{ name: 'GET /', method: 'GET', url: 'http://127.0.0.1:1/', body: '', weight: 1 }],
    load,
    http: { timeout: '10s', keep_alive: true, follow_redirects: false, max_redirects: 10, insecure_skip_verify: false },
    thresholds: [],
  });

  for (const ex of EXECUTORS) {
    it(`round-trips a stored ${ex} plan unchanged`, () => {
      expect(stored[ex]).toBeDefined();
      const spec = planWith(stored[ex]);
      expect(formToPlan(planToForm(spec))).toEqual(spec);
    });

    it(`sends only the fields that apply to ${ex} from a new form`, () => {
      const form = emptyForm();
      form.executor = ex;
      const load = formToPlan(form).load;
      const allowed = new Set(['executor', 'graceful_stop', ...EXECUTOR_FIELDS[ex]]);
      for (const k of Object.keys(load)) expect(allowed.has(k), `${k} must not be sent for ${ex}`).toBe(true);
      // every required field has a default in a new form
      expect(load.executor).toBe(ex);
    });
  }

  it('new forms send these exact loads', () => {
    const form = emptyForm();
    const loadFor = (ex: string) => {
      form.executor = ex;
      return formToPlan(form).load;
    };
    expect(loadFor('constant-vus')).toEqual({ executor: 'constant-vus', vus: 10, duration: '30s' });
    expect(loadFor('ramping-vus')).toEqual({
      executor: 'ramping-vus',
      stages: [
        { duration: '30s', target: 20 },
        { duration: '1m', target: 20 },
        { duration: '30s', target: 0 },
      ],
    });
    expect(loadFor('per-vu-iterations')).toEqual({ executor: 'per-vu-iterations', vus: 10, iterations: 100 });
    expect(loadFor('shared-iterations')).toEqual({ executor: 'shared-iterations', vus: 10, iterations: 100 });
    expect(loadFor('constant-arrival-rate')).toEqual({ executor: 'constant-arrival-rate', rate: 100, duration: '30s', pre_allocated_vus: 10 });
    expect(loadFor('ramping-arrival-rate')).toMatchObject({ executor: 'ramping-arrival-rate', pre_allocated_vus: 10 });
    expect(loadFor('ramping-arrival-rate')).not.toHaveProperty('start_rate');
    expect(loadFor('concurrency-sweep')).toEqual({ executor: 'concurrency-sweep', levels: [10, 50, 100, 500, 1000], step_duration: '10s' });
  });

  it('switching a loaded plan to another executor drops the fields of the old one', () => {
    const form = planToForm(planWith(stored['constant-arrival-rate']));
    form.executor = 'constant-vus';
    expect(formToPlan(form).load).toEqual({ executor: 'constant-vus', vus: 10, duration: '8s', graceful_stop: '5s' });
    form.executor = 'concurrency-sweep';
    expect(formToPlan(form).load).toEqual({ executor: 'concurrency-sweep', levels: [10, 50, 100, 500, 1000], step_duration: '10s', graceful_stop: '5s' });
  });

  it('stages: every row is sent in order, typed, blank ones too (so stages[i] is row i)', () => {
    const form = emptyForm();
    form.executor = 'ramping-vus';
    form.startVUs = '3';
    form.stages = [
      { duration: ' 10s ', target: '5' },
      { duration: '', target: '' },
      { duration: '1m', target: 'x' },
    ];
    expect(formToPlan(form).load).toEqual({
      executor: 'ramping-vus',
      start_vus: 3,
      stages: [
        { duration: '10s', target: 5 },
        { duration: '', target: '' },
        { duration: '1m', target: 'x' },
      ],
    });
    const slots = formSlots(form);
    expect(slots).toContain('load.stages');
    expect(slots).toContain('load.stages[2].duration');
    expect(slots).toContain('load.stages[2].target');
    expect(slots).not.toContain('load.vus');
    form.stages = [];
    expect(formToPlan(form).load).not.toHaveProperty('stages');
  });

  it('levels: a comma-separated input ⇄ load.levels, bad entries kept for the server to name', () => {
    expect(parseLevels('1, 5,20')).toEqual([1, 5, 20]);
    expect(parseLevels(' 10 ,, 50 ,')).toEqual([10, 50]);
    expect(parseLevels('10, abc, 1.5')).toEqual([10, 'abc', '1.5']);
    expect(parseLevels('  ')).toBeUndefined();
    const form = planToForm(planWith(stored['concurrency-sweep']));
    expect(form.levels).toBe('1, 5, 20');
    form.levels = '';
    expect(formToPlan(form).load).not.toHaveProperty('levels');
    form.levels = '2, x';
    expect(levelLabel(form, 'load.levels[1]')).toBe('level 2 (x): ');
    expect(formSlots(form)).toEqual(expect.arrayContaining(['load.levels', 'load.step_duration', 'load.graceful_stop']));
  });

  it('an executor the form does not know keeps its loaded fields', () => {
    const form = planToForm(planWith({ executor: 'externally-controlled', vus: 3, max_duration: '1m', graceful_stop: '5s' }));
    expect(formToPlan(form).load).toEqual({ executor: 'externally-controlled', vus: 3, max_duration: '1m', graceful_stop: '5s' });
  });
});

describe('HTTP options', () => {
  it('a new form sends redirect / TLS / connect options only when set', () => {
    const form = emptyForm();
    expect(formToPlan(form).http).toEqual({ timeout: '10s', keep_alive: true });
    form.followRedirects = true;
    form.maxRedirects = '3';
    form.connectTimeout = '2s';
    form.insecureSkipVerify = true;
    expect(formToPlan(form).http).toEqual({
      timeout: '10s',
      keep_alive: true,
      follow_redirects: true,
      max_redirects: 3,
      connect_timeout: '2s',
      insecure_skip_verify: true,
    });
  });

  it('a loaded plan sends back the options it had, defaults included, and keeps hosts', () => {
    const spec: PlanSpec = {
      name: 'p',
      requests: [{ url: 'http://127.0.0.1:1/' }],
      load: { executor: 'constant-vus', vus: 1, duration: '1s' },
      http: { timeout: '10s', connect_timeout: '1s', keep_alive: true, follow_redirects: false, max_redirects: 10, insecure_skip_verify: false, hosts: { 'a.test': '127.0.0.1' } },
      thresholds: [],
    };
    const form = planToForm(spec);
    expect(form.connectTimeout).toBe('1s');
    expect(formToPlan(form).http).toEqual(spec.http);
    form.connectTimeout = '';
    expect(formToPlan(form).http).not.toHaveProperty('connect_timeout');
  });
});

describe('loadSummary / parseGoDuration', () => {
  it('reads Go durations', () => {
    expect(parseGoDuration('1m30s')).toBe(90);
    expect(parseGoDuration('10m0s')).toBe(600);
    expect(parseGoDuration('500ms')).toBe(0.5);
    expect(parseGoDuration('1h')).toBe(3600);
    expect(parseGoDuration('ten')).toBeNull();
    expect(fmtSpan(90)).toBe('1m30s');
    expect(fmtSpan(600)).toBe('10m');
  });

  it('describes each load model in a few words', () => {
    expect(loadSummary({ executor: 'constant-vus', vus: 10, duration: '30s' })).toBe('10 VUs · 30s');
    expect(loadSummary({ executor: 'concurrency-sweep', levels: [1, 5, 20], step_duration: '3s' })).toBe('1, 5, 20 VUs × 3s');
    expect(loadSummary({ executor: 'constant-arrival-rate', rate: 200, time_unit: '1s', duration: '8s', pre_allocated_vus: 5, max_vus: 50 })).toBe(
      '200 it/s · 8s · 5–50 VUs',
    );
    expect(loadSummary({ executor: 'ramping-vus', stages: [{ duration: '10s', target: 5 }, { duration: '50s', target: 0 }] })).toBe('0→5→0 VUs · 1m');
  });
});
