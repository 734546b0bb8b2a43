// The generated contract (contract.gen.ts) against what the UI holds by hand: locale keys and the
// form's load fields.
import { describe, expect, it } from 'vitest';
import { EXECUTORS, EXECUTOR_INFO } from './contract.gen';
import { en } from './locales/en';
import { zhCN } from './locales/zh-CN';
import { emptyForm, formToPlan, LOAD_FIELD_UI } from './planForm';

describe('generated contract', () => {
  it('names locale keys that both languages have', () => {
    const keys = EXECUTORS.flatMap((ex) => [EXECUTOR_INFO[ex].helpKey, ...EXECUTOR_INFO[ex].fields.map((f) => f.helpKey)]);
    expect(keys.length).toBeGreaterThan(EXECUTORS.length);
    for (const k of keys) {
      expect(en, `en lacks ${k}`).toHaveProperty([k]);
      expect(zhCN, `zh-CN lacks ${k}`).toHaveProperty([k]);
    }
  });

  it('has a form input for every load field, and a new form sends each executor its required fields', () => {
    for (const ex of EXECUTORS) {
      const form = emptyForm();
      form.executor = ex;
      const load = formToPlan(form).load as Record<string, unknown>;
      for (const f of EXECUTOR_INFO[ex].fields) {
        if (f.name !== 'stages') expect(LOAD_FIELD_UI[f.name], `${ex}.${f.name}`).toBeDefined();
        if (f.required) expect(load, `${ex} without ${f.name}`).toHaveProperty([f.name]);
      }
    }
  });
});
