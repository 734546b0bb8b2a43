import { describe, expect, it } from 'vitest';
import { MASKED, alwaysSecret, formToPlan, isSecretHeader, nameURL, planToForm, requestName, requestNames } from './planForm';
import type { PlanSpec } from './types';

// A plan as GET /api/plans/:id shows it: secret header values masked by the server.
const shown: PlanSpec = {
  name: 'api',
  requests: [
    {
      name: 'items',
      method: 'GET',
      url: 'http://127.0.0.1:8090/items?api_key={{secret.KEY}}',
      headers: { Authorization: MASKED, 'X-Api-Key': MASKED, Accept: 'application/json' },
      body: '',
      weight: 1,
      secret_headers: ['X-Api-Key'],
    },
  ],
  load: { executor: 'constant-vus', vus: 1, duration: '10s', graceful_stop: '5s' },
  http: { timeout: '10s', keep_alive: true, follow_redirects: false, max_redirects: 10, insecure_skip_verify: false },
  thresholds: [],
} as PlanSpec;

describe('secret headers in the plan form', () => {
  it('marks Authorization, Cookie, Proxy-Authorization always and secret_headers by name, case-insensitively', () => {
    expect(['Authorization', 'cookie', 'PROXY-AUTHORIZATION', ' authorization '].every(alwaysSecret)).toBe(true);
    expect(alwaysSecret('X-Api-Key')).toBe(false);
    const form = planToForm(shown);
    const rows = form.requests[0].headers;
    expect(rows.map((h) => [h.key, isSecretHeader(h)])).toEqual([
      ['Authorization', true],
      ['X-Api-Key', true],
      ['Accept', false],
    ]);
    expect(form.requests[0].extra).toEqual({}); // secret_headers is the form's own field
    const lower = planToForm({ ...shown, requests: [{ ...shown.requests![0], secret_headers: ['x-api-key'] }] });
    expect(isSecretHeader(lower.requests[0].headers[1])).toBe(true);
    expect(formToPlan(lower).requests[0].secret_headers).toEqual(['X-Api-Key']); // the header's own spelling
  });

  it('sends untouched placeholders back as they were, so the server keeps the stored values', () => {
    const sent = formToPlan(planToForm(shown));
    expect(sent).toEqual(shown);
    expect(sent.requests[0].headers).toEqual({ Authorization: MASKED, 'X-Api-Key': MASKED, Accept: 'application/json' });
  });

  it('a toggled header goes into secret_headers; Authorization is never listed; unmarking removes it', () => {
    const form = planToForm(shown);
    form.requests[0].headers[2].secret = true; // Accept
    form.requests[0].headers.push({ key: 'Cookie', value: 'sid=1', secret: true });
    expect(formToPlan(form).requests[0].secret_headers).toEqual(['X-Api-Key', 'Accept']);
    form.requests[0].headers[1].secret = false;
    form.requests[0].headers[2].secret = false;
    expect(formToPlan(form).requests[0]).not.toHaveProperty('secret_headers');
  });
});

describe('default request names', () => {
  it('leave out the query string, the fragment and user:password@', () => {
    expect(nameURL('http://u:p@h:8080/a/{{id}}?key=K#x')).toBe('http://h:8080/a/{{id}}');
    expect(nameURL('https://h/p@q?x=a@b')).toBe('https://h/p@q');
    const form = planToForm(shown);
    form.requests[0].name = '';
    expect(requestName(form.requests[0])).toBe('GET http://127.0.0.1:8090/items');
    expect(requestNames(form)).toEqual(['GET http://127.0.0.1:8090/items']);
  });
});
