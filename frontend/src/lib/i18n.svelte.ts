// A small i18n module: two plain dictionaries (English, Simplified Chinese) with typed keys, the
// current locale as reactive state (templates that call t() re-render when it changes), remembered
// in localStorage and defaulting to the browser's language. Numbers, dates and units go through
// Intl with intlLocale() (see format.ts).
import { en } from './locales/en';
import { zhCN } from './locales/zh-CN';

export const LOCALES = ['en', 'zh-CN'] as const;
export type Locale = (typeof LOCALES)[number];
export type MessageKey = keyof typeof en;
export type Dictionary = Record<MessageKey, string>;
/** Keys with plural forms: `<base>.one` / `<base>.other` (Intl.PluralRules picks). */
export type PluralBase = { [K in MessageKey]: K extends `${infer B}.other` ? B : never }[MessageKey];
export type Vars = Record<string, string | number>;

export const DICTIONARIES: Record<Locale, Dictionary> = { en, 'zh-CN': zhCN };
/** Each language's name in itself, for the switcher. */
export const LOCALE_NAMES: Record<Locale, string> = { en: 'English', 'zh-CN': '简体中文' };
export const STORAGE_KEY = 'volley.lang';

function isLocale(v: unknown): v is Locale {
  return typeof v === 'string' && (LOCALES as readonly string[]).includes(v);
}

/** detectLocale: a stored choice wins; else the first browser language we have (zh* → zh-CN); else English. */
export function detectLocale(stored: string | null | undefined, languages: readonly string[]): Locale {
  if (isLocale(stored)) return stored;
  for (const l of languages) {
    const low = l.toLowerCase();
    if (low.startsWith('zh')) return 'zh-CN';
    if (low.startsWith('en')) return 'en';
  }
  return 'en';
}

function readStored(): string | null {
  try {
    return typeof localStorage === 'undefined' ? null : localStorage.getItem(STORAGE_KEY);
  } catch {
    return null;
  }
}

function browserLanguages(): string[] {
  if (typeof navigator === 'undefined') return [];
  const list = navigator.languages?.length ? [...navigator.languages] : [];
  if (navigator.language) list.push(navigator.language);
  return list;
}

const state = $state<{ locale: Locale }>({ locale: detectLocale(readStored(), browserLanguages()) });

function applyDocumentLang(l: Locale) {
  if (typeof document !== 'undefined') document.documentElement.lang = l;
}
applyDocumentLang(state.locale);

export function getLocale(): Locale {
  return state.locale;
}

/** setLocale switches the language and remembers the choice. */
export function setLocale(l: Locale): void {
  if (!isLocale(l)) return;
  state.locale = l;
  try {
    localStorage.setItem(STORAGE_KEY, l);
  } catch {
    /* private mode: the choice lasts for the page */
  }
  applyDocumentLang(l);
}

/** intlLocale is the BCP 47 tag for Intl formatters. */
export function intlLocale(): string {
  return state.locale === 'zh-CN' ? 'zh-CN' : 'en-US';
}

function fill(text: string, vars?: Vars): string {
  if (!vars) return text;
  return text.replace(/\{(\w+)\}/g, (m, name: string) => (name in vars ? String(vars[name]) : m));
}

/** t looks a key up in the current language (English when missing) and fills {placeholders}. */
export function t(key: MessageKey, vars?: Vars): string {
  const text = DICTIONARIES[state.locale][key] ?? en[key] ?? key;
  return fill(text, vars);
}

/** hasKey tells whether a dynamic key (e.g. `status.${s}`) exists. */
export function hasKey(key: string): key is MessageKey {
  return Object.prototype.hasOwnProperty.call(en, key);
}

/** tx translates a key built at run time, with a fallback for values the dictionary does not know. */
export function tx(key: string, fallback: string, vars?: Vars): string {
  return hasKey(key) ? t(key, vars) : fill(fallback, vars);
}

const pluralCache = new Map<string, Intl.PluralRules>();

/** tn picks the plural form of `<base>.one|other` for n; {n} is available as a placeholder (raw). */
export function tn(base: PluralBase, n: number, vars?: Vars): string {
  const loc = intlLocale();
  let pr = pluralCache.get(loc);
  if (!pr) {
    pr = new Intl.PluralRules(loc);
    pluralCache.set(loc, pr);
  }
  const form = pr.select(n);
  const key = `${base}.${form}`;
  return hasKey(key) ? t(key, { n, ...vars }) : t(`${base}.other` as MessageKey, { n, ...vars });
}

/** placeholders lists the {names} in a message (the i18n test checks both languages agree). */
export function placeholders(text: string): string[] {
  return [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
}
