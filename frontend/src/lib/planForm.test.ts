import { describe, expect, it } from 'vitest';
import {
  EXECUTORS,
  EXECUTOR_FIELDS,
  availableVars,
  checkToRow,
  checkValueIssue,
  csvPreview,
  emptyCheck,
  emptyExtract,
  emptyForm,
  emptyRequest,
  parseCsv,
  reconcileThresholdOpts,
  requestNames,
  retypeCheck,
  rowToCheck,
  rowToExtract,
  thresholdEntries,
  typedNumber,
  weightShares,
  type CheckRow,
  type JsonValueType,
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
import { mapFieldErrors } from './fieldErrors';
import type { PlanInput, PlanSpec } from './types';

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
    load: load as PlanSpec['load'],
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
    const spec: PlanInput = {
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

  it('edits http.max_header and http.proxy, leaving them out when empty', () => {
    const spec: PlanInput = {
      name: 'p',
      requests: [{ url: 'http://127.0.0.1:1/' }],
      load: { executor: 'constant-vus', vus: 1, duration: '1s' },
      http: { timeout: '10s', keep_alive: true, max_header: 131072, proxy: 'http://127.0.0.1:3128' },
      thresholds: [],
    };
    const form = planToForm(spec);
    expect([form.maxHeader, form.proxy, Object.keys(form.extraHttp)]).toEqual(['131072', 'http://127.0.0.1:3128', []]);
    expect(formToPlan(form).http).toMatchObject({ max_header: 131072, proxy: 'http://127.0.0.1:3128' });
    form.maxHeader = '';
    form.proxy = ' ';
    expect(formToPlan(form).http).not.toHaveProperty('max_header');
    expect(formToPlan(form).http).not.toHaveProperty('proxy');
    expect(formSlots(form)).toEqual(expect.arrayContaining(['http.max_header', 'http.proxy']));
  });

  it('edits http.h2_fallback and http.h2_connections, leaving them out when unset', () => {
    const spec: PlanInput = {
      name: 'p',
      requests: [{ url: 'https://127.0.0.1:1/' }],
      load: { executor: 'constant-vus', vus: 1, duration: '1s' },
      http: { timeout: '10s', keep_alive: true, version: '2', h2_fallback: true, h2_connections: 4 },
      thresholds: [],
    };
    const form = planToForm(spec);
    expect([form.httpVersion, form.h2Fallback, form.h2Connections, Object.keys(form.extraHttp)]).toEqual(['2', true, '4', []]);
    expect(formToPlan(form).http).toMatchObject({ version: '2', h2_fallback: true, h2_connections: 4 });
    const fresh = planToForm({ ...spec, http: { timeout: '10s' } });
    fresh.httpVersion = 'h2c';
    expect(formToPlan(fresh).http).not.toHaveProperty('h2_fallback');
    expect(formToPlan(fresh).http).not.toHaveProperty('h2_connections');
    expect(formSlots(form)).toEqual(expect.arrayContaining(['http.h2_fallback', 'http.h2_connections']));
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

// A scenario plan exactly as GET /api/plans/:id returned it from `volley serve` (defaults filled, the
// server's key order): flow, think times, data, every check type, every extract source, object thresholds.
const scenarioJSON = JSON.stringify({"name": "login flow", "requests": [{"name": "login", "method": "POST", "url": "http://127.0.0.1:18801/login?u={{user}}", "headers": {"Content-Type": "application/json"}, "body": "{\"user\":\"{{user}}\",\"pass\":\"{{pass}}\"}", "weight": 2, "think_time": "500ms-2s", "checks": [{"type": "status", "op": "eq", "value": 200}, {"type": "header", "op": "contains", "value": "json", "name": "Content-Type"}, {"type": "header", "op": "exists", "name": "X-Id"}, {"type": "body", "op": "not_contains", "value": "error"}, {"type": "json", "op": "eq", "value": true, "path": "data.ok"}, {"type": "json", "op": "gt", "value": 2.5, "path": "data.n"}, {"type": "json", "op": "ne", "value": "x", "path": "data.s"}, {"type": "json", "op": "exists", "path": "data.id"}, {"type": "latency", "op": "le", "value": "200ms"}], "extract": [{"var": "token", "from": "json", "path": "data.token"}, {"var": "sid", "from": "header", "name": "X-Session"}, {"var": "id", "from": "regex", "pattern": "id=(\\d+)"}]}, {"name": "items", "method": "GET", "url": "http://127.0.0.1:18801/items/{{id}}?vu={{vu}}", "headers": {"Authorization": "Bearer {{token}}"}, "body": "", "weight": 1}], "flow": "sequence", "think_time": "1s", "data": {"csv": "user,pass\nann,a1\nbob,b2\n", "mode": "per-vu"}, "load": {"executor": "constant-vus", "vus": 10, "duration": "30s", "graceful_stop": "5s"}, "http": {"timeout": "10s", "keep_alive": true, "follow_redirects": false, "max_redirects": 10, "insecure_skip_verify": false}, "thresholds": ["p(95)<200ms", {"expr": "p(95)<300ms", "request": "login", "abort_on_fail": true}, {"expr": "error_rate<1%", "request": "items"}, {"expr": "rps>10", "abort_on_fail": true}]});

describe('scenarios ⇄ plan JSON', () => {
  it('round-trips a stored scenario plan to the identical JSON (key order included)', () => {
    const spec = JSON.parse(scenarioJSON) as PlanSpec;
    const form = planToForm(spec);
    expect(form.flow).toBe('sequence');
    expect(form.thinkTime).toBe('1s');
    expect(form.dataCsv).toBe('user,pass\nann,a1\nbob,b2\n');
    expect(form.dataMode).toBe('per-vu');
    expect(form.requests[0].weight).toBe('2');
    expect(form.requests[0].thinkTime).toBe('500ms-2s');
    expect(form.requests[0].checks).toHaveLength(9);
    expect(form.requests[0].extract.map((x) => [x.var, x.from, x.arg])).toEqual([
      ['token', 'json', 'data.token'],
      ['sid', 'header', 'X-Session'],
      ['id', 'regex', 'id=(\\d+)'],
    ]);
    expect(form.requests[0].extra).toEqual({});
    expect(form.thresholds).toBe('p(95)<200ms\np(95)<300ms\nerror_rate<1%\nrps>10');
    expect(form.thresholdOpts.map((o) => [o.request, o.abortOnFail])).toEqual([
      ['', false],
      ['login', true],
      ['items', false],
      ['', true],
    ]);
    expect(JSON.stringify(formToPlan(form))).toBe(scenarioJSON);
    // and again from the form's own output
    expect(JSON.stringify(formToPlan(planToForm(formToPlan(form))))).toBe(scenarioJSON);
  });

  it('a new form sends no scenario fields; set ones are sent in the server’s places', () => {
    const form = emptyForm();
    let plan = formToPlan(form);
    for (const k of ['flow', 'think_time', 'data']) expect(plan).not.toHaveProperty(k);
    expect(plan.requests[0]).toEqual({ method: 'GET', url: 'http://127.0.0.1:8090/', body: '' });

    form.flow = 'sequence';
    form.thinkTime = ' 500ms-2s ';
    form.dataCsv = 'user,pass\nann,a1\n';
    form.requests[0].weight = '3';
    form.requests[0].thinkTime = '1s';
    plan = formToPlan(form);
    expect(Object.keys(plan)).toEqual(['name', 'requests', 'flow', 'think_time', 'data', 'load', 'http', 'thresholds']);
    expect(plan.think_time).toBe('500ms-2s');
    expect(plan.data).toEqual({ csv: 'user,pass\nann,a1\n' }); // the default mode is left out
    form.dataMode = 'per-vu';
    expect(formToPlan(form).data).toEqual({ csv: 'user,pass\nann,a1\n', mode: 'per-vu' });
    expect(plan.requests[0]).toEqual({ method: 'GET', url: 'http://127.0.0.1:8090/', body: '', weight: 3, think_time: '1s' });

    form.dataCsv = '  \n';
    expect(formToPlan(form)).not.toHaveProperty('data');
    form.flow = 'weighted';
    expect(formToPlan(form)).not.toHaveProperty('flow');
  });

  it('keeps data.file and unknown keys of checks, extract rules and thresholds', () => {
    const spec = {
      name: 'p',
      requests: [
        {
          url: 'http://127.0.0.1:1/',
          checks: [{ type: 'status', op: 'eq', value: 200, note: 'x' }],
          extract: [{ var: 'a', from: 'json', path: 'a', name: 'stale' }],
        },
      ],
      data: { file: 'users.csv' },
      load: { vus: 1, duration: '1s' },
      thresholds: [{ expr: 'rps>1', request: '', tag: 'x' }],
    } as unknown as PlanSpec;
    const out = formToPlan(planToForm(spec));
    expect(out.data).toEqual({ file: 'users.csv' });
    expect(out.requests[0].checks).toEqual([{ type: 'status', op: 'eq', value: 200, note: 'x' }]);
    expect(out.requests[0].extract).toEqual([{ var: 'a', from: 'json', path: 'a', name: 'stale' }]);
    expect(out.thresholds).toEqual([{ expr: 'rps>1', tag: 'x' }]);
  });
});

describe('checks', () => {
  const check = (over: Partial<CheckRow>) => rowToCheck({ ...emptyCheck(over.type), ...over });

  it('status: the value is a number (text that is not one is sent for the server to name)', () => {
    expect(check({ type: 'status', op: 'eq', value: '404' })).toEqual({ type: 'status', op: 'eq', value: 404 });
    expect(check({ type: 'status', op: 'lt', value: ' 400 ' })).toEqual({ type: 'status', op: 'lt', value: 400 });
    expect(check({ type: 'status', op: 'eq', value: 'abc' })).toEqual({ type: 'status', op: 'eq', value: 'abc' });
    expect(check({ type: 'status', op: 'eq', value: '' })).toEqual({ type: 'status', op: 'eq' });
  });

  it('header: name and a string value; exists needs no value', () => {
    expect(JSON.stringify(check({ type: 'header', name: ' Content-Type ', op: 'contains', value: 'json' }))).toBe(
      '{"type":"header","op":"contains","value":"json","name":"Content-Type"}',
    );
    expect(check({ type: 'header', name: 'X-Id', op: 'exists', value: '' })).toEqual({ type: 'header', op: 'exists', name: 'X-Id' });
    expect(check({ type: 'header', name: 'X-Id', op: 'eq', value: '' })).toEqual({ type: 'header', op: 'eq', value: '', name: 'X-Id' });
  });

  it('body: contains / not_contains a string, sent as typed', () => {
    expect(check({ type: 'body', op: 'not_contains', value: ' error ' })).toEqual({ type: 'body', op: 'not_contains', value: ' error ' });
  });

  it('json: the value type picks the JSON type', () => {
    const j = (valueType: JsonValueType, value: string, op = 'eq') => check({ type: 'json', path: 'data.x', op, value, valueType });
    expect(JSON.stringify(j('text', '42'))).toBe('{"type":"json","op":"eq","value":"42","path":"data.x"}');
    expect(j('number', '42').value).toBe(42);
    expect(j('number', '-2.5').value).toBe(-2.5);
    expect(j('number', 'abc').value).toBe('abc');
    expect(j('true', '').value).toBe(true);
    expect(j('false', 'ignored').value).toBe(false);
    expect(j('null', '')).toHaveProperty('value', null);
    expect(j('text', '', 'exists')).toEqual({ type: 'json', op: 'exists', path: 'data.x' });
    expect(j('json', '[1,2]').value).toEqual([1, 2]);
    expect(checkValueIssue({ ...emptyCheck('json'), valueType: 'number', value: 'abc' })).toContain('not a number');
    expect(checkValueIssue({ ...emptyCheck('json'), valueType: 'number', value: '3' })).toBe('');
  });

  it('json: stored values come back with their type', () => {
    expect(checkToRow({ type: 'json', op: 'eq', value: 3, path: 'a' })).toMatchObject({ valueType: 'number', value: '3', path: 'a' });
    expect(checkToRow({ type: 'json', op: 'eq', value: false, path: 'a' })).toMatchObject({ valueType: 'false', value: '' });
    expect(checkToRow({ type: 'json', op: 'eq', value: '3', path: 'a' })).toMatchObject({ valueType: 'text', value: '3' });
    expect(checkToRow({ type: 'json', op: 'eq', value: { a: 1 }, path: 'a' })).toMatchObject({ valueType: 'json', value: '{"a":1}' });
    for (const v of [3, false, '3', { a: 1 }, [1]]) {
      const c = { type: 'json', op: 'eq', value: v, path: 'a' };
      expect(rowToCheck(checkToRow(c))).toEqual(c);
    }
  });

  it('latency: a duration string', () => {
    expect(check({ type: 'latency', op: 'lt', value: ' 200ms ' })).toEqual({ type: 'latency', op: 'lt', value: '200ms' });
  });

  it('changing the type keeps an op the new type has and starts the value over', () => {
    const row = emptyCheck('status');
    expect(row).toMatchObject({ op: 'eq', value: '200' });
    retypeCheck(row, 'latency');
    expect(row).toMatchObject({ type: 'latency', op: 'lt', value: '200ms' });
    retypeCheck(row, 'json');
    expect(row).toMatchObject({ type: 'json', op: 'lt', value: '' });
    retypeCheck(row, 'body');
    expect(row.op).toBe('contains');
  });

  it('extract: var, from and the key of its source', () => {
    expect(JSON.stringify(rowToExtract({ ...emptyExtract(), var: ' token ', arg: ' data.token ' }))).toBe(
      '{"var":"token","from":"json","path":"data.token"}',
    );
    expect(rowToExtract({ var: 'sid', from: 'header', arg: 'X-Session', extra: {} })).toEqual({ var: 'sid', from: 'header', name: 'X-Session' });
    expect(rowToExtract({ var: 'id', from: 'regex', arg: ' id=(\\d+)', extra: {} })).toEqual({ var: 'id', from: 'regex', pattern: ' id=(\\d+)' });
  });
});

describe('thresholds with options', () => {
  it('plain lines are strings; a request or abort makes an object', () => {
    const opts = [
      { request: '', abortOnFail: false, extra: {} },
      { request: 'login', abortOnFail: false, extra: {} },
      { request: '', abortOnFail: true, extra: {} },
    ];
    expect(thresholdEntries({ thresholds: 'p(95)<200ms\n\n p(99)<1s \nrps>5\nerror_rate<1%', thresholdOpts: opts })).toEqual([
      'p(95)<200ms',
      { expr: 'p(99)<1s', request: 'login' },
      { expr: 'rps>5', abort_on_fail: true },
      'error_rate<1%',
    ]);
  });

  it('options follow their line when lines are inserted, removed or edited', () => {
    const o = (request: string) => ({ request, abortOnFail: false, extra: {} });
    const old = [o('a'), o('b'), o('c')];
    const text = 'p(95)<1s\np(95)<1s\nrps>5';
    // a line inserted on top: the others keep theirs
    expect(reconcileThresholdOpts(text, old, 'avg<5ms\n' + text).map((x) => x.request)).toEqual(['', 'a', 'b', 'c']);
    // the first line removed
    expect(reconcileThresholdOpts(text, old, 'p(95)<1s\nrps>5').map((x) => x.request)).toEqual(['a', 'c']);
    // a line edited in place keeps its options, as do the others
    expect(reconcileThresholdOpts(text, old, 'p(95)<1s\np(95)<2s\nrps>5').map((x) => x.request)).toEqual(['a', 'b', 'c']);
    expect(reconcileThresholdOpts(text, old, 'p(95)<1s\np(95)<1s\nrps>50').map((x) => x.request)).toEqual(['a', 'b', 'c']);
    // a line added at the end is plain; the middle one removed
    expect(reconcileThresholdOpts(text, old, text + '\navg<1ms').map((x) => x.request)).toEqual(['a', 'b', 'c', '']);
    expect(reconcileThresholdOpts('x\ny\nz', old, 'x\nz').map((x) => x.request)).toEqual(['a', 'c']);
    // everything replaced: pairs up in order, extra lines plain
    expect(reconcileThresholdOpts(text, old, 'q\nr\ns\nt').map((x) => x.request)).toEqual(['a', 'b', 'c', '']);
    // blank lines do not count
    expect(reconcileThresholdOpts(text, old, text + '\n\n').map((x) => x.request)).toEqual(['a', 'b', 'c']);
  });

  it('targets are the request names the server uses', () => {
    const form = emptyForm();
    form.requests = [
      { ...emptyRequest(), name: 'login', url: 'http://h/login' },
      { ...emptyRequest(), method: 'POST', url: ' http://h/x ' },
    ];
    expect(requestNames(form)).toEqual(['login', 'POST http://h/x']);
  });
});

describe('data CSV and variables', () => {
  it('previews columns and rows the way the server reads the CSV', () => {
    expect(csvPreview('user,pass\nann,a1\nbob,b2\n')).toEqual({ columns: ['user', 'pass'], rows: 2, problem: '' });
    expect(csvPreview('user, pass\r\n\r\n"ann, jr",a1\r\n')).toEqual({ columns: ['user', 'pass'], rows: 1, problem: '' });
    expect(parseCsv('a,b\n"x\ny","say ""hi"""\n').records).toEqual([
      ['a', 'b'],
      ['x\ny', 'say "hi"'],
    ]);
    expect(csvPreview('user\n').problem).toContain('at least one data row');
    expect(csvPreview('a,b\n1\n').problem).toBe('row 1 has 1 fields, the header has 2');
    expect(csvPreview('a b,c\n1,2\n').problem).toContain('"a b" is not a variable name');
    expect(csvPreview('a,b\n"1,2\n').problem).toContain('not closed');
  });

  it('lists built-ins, data columns and extracted vars', () => {
    const form = emptyForm();
    form.dataCsv = 'user,pass\nann,a1\n';
    form.requests[0].extract = [{ ...emptyExtract(), var: 'token' }, { ...emptyExtract(), var: '' }];
    expect(availableVars(form)).toEqual({ builtins: ['vu', 'iteration', 'uuid', 'random_int 1 100'], columns: ['user', 'pass'], extracted: ['token'] });
  });

  it('weight shares: blank counts as 1; a bad weight has no share', () => {
    const form = emptyForm();
    form.requests = [{ ...emptyRequest(), weight: '3' }, { ...emptyRequest() }, { ...emptyRequest(), weight: 'x' }];
    expect(weightShares(form)).toEqual([0.75, 0.25, null]);
    expect(typedNumber('2.5')).toBe(2.5);
  });
});

describe('field errors of scenario paths', () => {
  it('lands each nested problem on its input, row or table', () => {
    const form = planToForm(JSON.parse(scenarioJSON) as PlanSpec);
    form.flow = 'weighted';
    const own = [
      'flow',
      'think_time',
      'data.csv',
      'data.mode',
      'requests[0].weight',
      'requests[0].think_time',
      'requests[0].checks[0].value',
      'requests[0].checks[1].name',
      'requests[0].checks[4].path',
      'requests[0].checks',
      'requests[0].extract[0].path',
      'requests[0].extract[1].name',
      'requests[0].extract[2].pattern',
      'thresholds[1].request',
    ];
    const elsewhere: Record<string, string> = {
      'requests[0].checks[2].value': 'requests[0].checks[2]', // header exists: no value input → its row
      'requests[0].checks[3].foo': 'requests[0].checks[3]', // unknown key → its row
      'requests[0].extract[2].path': 'requests[0].extract[2]', // not the regex's input → its row
      'requests[1].checks[0].value': 'requests[1].checks', // request 2 has no check rows → its table
      'thresholds[2]': 'thresholds',
      'data.file': 'data',
    };
    const fields = Object.fromEntries([...own, ...Object.keys(elsewhere)].map((p) => [p, 'problem']));
    const { bySlot, unmatched } = mapFieldErrors(fields, formSlots(form));
    const slotOf = (path: string) => Object.entries(bySlot).find(([, ps]) => ps.some((p) => p.path === path))?.[0];
    for (const p of own) expect(slotOf(p), p).toBe(p);
    for (const [p, slot] of Object.entries(elsewhere)) expect(slotOf(p), p).toBe(slot);
    expect(unmatched).toEqual([]);

    // weight has no input in the sequence flow: its problem goes to the banner
    form.flow = 'sequence';
    expect(mapFieldErrors({ 'requests[0].weight': 'x' }, formSlots(form)).unmatched.map((p) => p.path)).toEqual(['requests[0].weight']);
  });
});
