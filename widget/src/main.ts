/**
 * The embeddable chat widget (`GET /api/v1/widget/embed.js`). A page adds
 *   <script src="https://…/api/v1/widget/embed.js" data-widget-id="…" async></script>
 * and gets a launcher button and a chat panel, drawn inside a shadow root from the widget's public
 * config. It talks to nothing but the API the script came from, keeps the chat across reloads in
 * the tab (sessionStorage), and never throws into the page: every failure ends in the panel as a
 * readable message or, before the launcher exists, in one console warning and no launcher at all.
 * One opening bubble: the chat's begin message when the agent has one, else the widget's greeting.
 * Below 480 px wide the panel fills the screen, sized to the visual viewport so the field stays
 * above the on-screen keyboard; while open, the launcher is a close button.
 * `window.VoiceAgentWidget.onToolCall = async (call) => output` answers the agent's `function` tools.
 */
import { ApiError, client, type Chat, type ChatState, type Client, type Message, type PendingToolCall, type TurnListener, type WidgetConfig } from './api';
import { mountCall, type CallStats } from './call';
import { el, icon } from './dom';
import { styles } from './styles';
import { texts } from './text';

interface Global {
  onToolCall?: (call: PendingToolCall) => unknown;
  open?: () => void;
  close?: () => void;
  /** The call button's counters (call.ts), with `voice_enabled`. */
  call?: CallStats;
}

declare global {
  interface Window {
    VoiceAgentWidget?: Global;
  }
}

const warn = (...args: unknown[]) => {
  try {
    console.warn('[voice-agent-widget]', ...args);
  } catch {
    /* no console */
  }
};

const ICON_CHAT = 'M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H8l-4 4V6a2 2 0 0 1 2-2z';
const ICON_CLOSE = 'M6.4 5L12 10.6 17.6 5 19 6.4 13.4 12 19 17.6 17.6 19 12 13.4 6.4 19 5 17.6 10.6 12 5 6.4z';
const ICON_SEND = 'M3 20.5l18-8.5L3 3.5v6.6l12 1.9-12 1.9z';
const MAX_TOOL_ROUNDS = 5;

/** Black or white, whichever reads better on `hex` (WCAG relative luminance). */
function textOn(hex: string): string {
  const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex);
  if (!m) return '#ffffff';
  const lin = (c: string) => {
    const v = parseInt(c, 16) / 255;
    return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
  };
  const l = 0.2126 * lin(m[1]!) + 0.7152 * lin(m[2]!) + 0.0722 * lin(m[3]!);
  return (l + 0.05) / 0.05 > 1.05 / (l + 0.05) ? '#0f172a' : '#ffffff';
}

function storage(): Storage | undefined {
  try {
    return window.sessionStorage;
  } catch {
    return undefined;
  }
}

interface Saved {
  id: string;
  token: string;
  open?: boolean;
}

function mount(api: Client, config: WidgetConfig, widgetId: string, g: Global): void {
  const t = texts(config.language);
  const color = /^#[0-9a-f]{6}$/i.test(config.primary_color) ? config.primary_color : '#2563eb';
  const key = `voice-agent-widget:${widgetId}`;
  const agentName = config.agent?.agent_name || config.title;
  /** The agent opens the chat itself: its begin message is the opening bubble, not the greeting. */
  const agentBegins = !!config.agent && config.agent.start_speaker !== 'user' && !!config.agent.begin_message.trim();
  const narrow = typeof matchMedia === 'function' ? matchMedia('(max-width: 479.98px)') : undefined;

  const host = el('div', undefined, { 'data-voice-agent-widget': widgetId });
  const shadow = host.attachShadow({ mode: 'open' });
  const style = el('style');
  style.textContent = styles(color, textOn(color), config.position === 'bottom-left');
  const root = el('div', 'root', { lang: config.language || 'en' });

  const launcher = el('button', 'launcher', { type: 'button', 'aria-label': `${t.open}: ${config.title}`, 'aria-expanded': 'false', 'aria-controls': 'vaw-panel', 'aria-haspopup': 'dialog' });
  launcher.appendChild(icon(ICON_CHAT));

  const panel = el('div', 'panel', { id: 'vaw-panel', role: 'dialog', 'aria-labelledby': 'vaw-title', hidden: '' });
  const head = el('div', 'head');
  const avatar = el('div', 'avatar', { 'aria-hidden': 'true' });
  if (/^https?:\/\//i.test(config.avatar_url)) {
    const img = el('img', undefined, { src: config.avatar_url, alt: '' });
    img.onerror = () => {
      img.remove();
      avatar.textContent = (agentName[0] ?? '?').toUpperCase();
    };
    avatar.appendChild(img);
  } else avatar.textContent = (agentName[0] ?? '?').toUpperCase();
  const title = el('h2', 'title', { id: 'vaw-title' }, config.title);
  const closer = el('button', 'icon', { type: 'button', 'aria-label': t.close });
  closer.appendChild(icon(ICON_CLOSE));
  head.append(avatar, title, closer);

  const log = el('div', 'log', { role: 'log', 'aria-live': 'polite', 'aria-label': t.log, tabindex: '0' });
  const typing = el('div', 'typing', { hidden: '' });
  typing.append(el('span', 'dot', { 'aria-hidden': 'true' }), el('span', 'dot', { 'aria-hidden': 'true' }), el('span', 'dot', { 'aria-hidden': 'true' }), el('span', 'sr', {}, `${agentName} ${t.typing}`));
  const notice = el('div', 'notice', { role: 'alert', hidden: '' });
  const form = el('form', 'form', { novalidate: '' });
  const input = el('input', 'input', { type: 'text', 'aria-label': t.message, placeholder: config.placeholder || t.message, maxlength: '4000', autocomplete: 'off', enterkeyhint: 'send' });
  const send = el('button', 'send', { type: 'submit', 'aria-label': t.send });
  send.appendChild(icon(ICON_SEND));
  form.append(input, send);
  panel.append(head, log, notice, form);
  root.append(panel, launcher);
  shadow.append(style, root);
  if (config.voice_enabled) {
    mountCall({
      shadow, head, closer, log, typing, agentName, language: config.language, color, onColor: textOn(color), g,
      showNotice: (text) => showNotice(text), clearNotice: () => clearNotice(), start: () => api.startCall(),
    });
  }

  let saved: Saved | undefined;
  let busy = false;
  let messages: Message[] = [];
  /** The chat's messages are known (started or read back), so they decide the opening bubble. */
  let known = false;

  const save = () => {
    try {
      const s = storage();
      if (s) saved ? s.setItem(key, JSON.stringify(saved)) : s.removeItem(key);
    } catch {
      /* storage full or refused: the chat still works in this page */
    }
  };

  const scroll = () => {
    log.scrollTop = log.scrollHeight;
  };

  function bubble(m: Message): HTMLElement {
    const b = el('div', `msg ${m.role === 'user' ? 'user' : 'agent'}`, {}, m.content);
    const links = (m.sources ?? []).filter((s) => s.url && /^https?:\/\//i.test(s.url));
    if (links.length) {
      const src = el('div', 'src', {}, `${t.sources} `);
      const seen = new Set<string>();
      for (const s of links) {
        if (seen.has(s.url!)) continue;
        seen.add(s.url!);
        let label = s.url!;
        try {
          const u = new URL(s.url!);
          label = u.hostname + (u.pathname === '/' ? '' : u.pathname);
        } catch {
          /* shown as given */
        }
        src.appendChild(el('a', undefined, { href: s.url!, target: '_blank', rel: 'noopener noreferrer' }, label));
      }
      b.appendChild(src);
    }
    return b;
  }

  /** The greeting is the opening bubble only when the chat does not open with the agent's own message. */
  function greets(): boolean {
    if (!config.greeting) return false;
    if (!known) return !agentBegins;
    const first = messages.find((m) => m.role === 'user' || m.role === 'agent');
    return first?.role !== 'agent';
  }

  function render(): void {
    log.textContent = '';
    if (greets()) log.appendChild(el('div', 'msg agent', {}, config.greeting));
    for (const m of messages) if (m.role === 'user' || m.role === 'agent') log.appendChild(bubble(m));
    log.appendChild(typing);
    scroll();
  }

  /** Draws a chat as read or started: its messages decide the opening bubble. */
  function show(list: Message[]): void {
    known = true;
    messages = list.filter((m) => m.role === 'user' || m.role === 'agent');
    render();
  }

  /**
   * Adds a turn's messages. A streamed turn's bubbles are already in place (`shown`): each is
   * replaced by its message's final bubble (sources and all), the visitor's own by the stored
   * user message; a draft whose message never completed is dropped.
   */
  function add(list: Message[], shown?: Live): void {
    for (const m of list) {
      if (m.role !== 'user' && m.role !== 'agent') continue;
      messages.push(m);
      const b = bubble(m);
      const draft = m.role === 'user' ? shown?.mine : shown?.drafts.get(m.id);
      if (draft?.parentNode) draft.replaceWith(b);
      else log.insertBefore(b, typing);
      if (m.role === 'user' && shown) shown.mine = undefined;
      shown?.drafts.delete(m.id);
    }
    shown?.drop();
    scroll();
  }

  /** A turn shown as it streams: an agent bubble grows with its deltas (the typing dots until the first, and between messages). */
  interface Live {
    listen: TurnListener;
    drafts: Map<string, HTMLElement>;
    mine?: HTMLElement;
    drop(): void;
  }
  function live(mine?: HTMLElement): Live {
    const drafts = new Map<string, HTMLElement>();
    return {
      drafts,
      mine,
      listen: {
        delta(id, text) {
          let b = drafts.get(id);
          if (!b) {
            b = el('div', 'msg agent', {}, '');
            drafts.set(id, b);
            log.insertBefore(b, typing);
          }
          typing.hidden = true;
          b.textContent += text;
          scroll();
        },
        completed(m) {
          if (m.role !== 'agent') return;
          const b = bubble(m);
          const d = drafts.get(m.id);
          if (d) d.replaceWith(b);
          else log.insertBefore(b, typing);
          drafts.set(m.id, b);
          typing.hidden = false;
          scroll();
        },
      },
      drop() {
        for (const b of drafts.values()) b.remove();
        drafts.clear();
      },
    };
  }

  function setBusy(on: boolean): void {
    busy = on;
    typing.hidden = !on;
    log.setAttribute('aria-busy', String(on));
    send.disabled = on;
    if (on) log.appendChild(typing);
    scroll();
  }

  function clearNotice(): void {
    notice.hidden = true;
    notice.textContent = '';
  }

  function showNotice(text: string, action?: { label: string; run: () => void }): void {
    notice.textContent = '';
    notice.appendChild(el('span', undefined, {}, text));
    if (action) {
      const b = el('button', 'btn', { type: 'button' }, action.label);
      b.onclick = () => {
        clearNotice();
        action.run();
      };
      notice.appendChild(b);
    }
    notice.hidden = false;
  }

  /** A failed request as words the visitor can act on. */
  function explain(err: unknown, retry: () => void): void {
    const e = err instanceof ApiError ? err : new ApiError(-1, String(err));
    if (!(err instanceof ApiError)) warn(err);
    const s = String(Math.max(1, Math.round(e.retryAfter ?? 5)));
    if ((e.status === 404 && e.details.reason === 'widget_inactive') || e.status === 422) unavailable();
    else if (e.status === 409 && e.details.status === 'ended') ended();
    else if (e.status === 409) void resume();
    else if (e.status === 429 && e.details.limit === 'daily_message_limit') showNotice(t.daily);
    else if (e.status === 429) showNotice(t.rate.replace('{s}', s), { label: t.retry, run: retry });
    else if (e.status === 503 || e.status === 504) showNotice(t.down.replace('{s}', s), { label: t.retry, run: retry });
    else if (e.status === 0) showNotice(t.offline, { label: t.retry, run: retry });
    else if (e.status === 401 || e.status === 404) lost();
    else showNotice(t.failed, { label: t.retry, run: retry });
  }

  function lost(): void {
    saved = undefined;
    save();
    input.disabled = true;
    showNotice(t.lost, { label: t.again, run: restart });
  }

  function ended(): void {
    input.disabled = true;
    send.disabled = true;
    showNotice(t.ended, { label: t.again, run: restart });
  }

  /** The widget was deactivated (or has no agent now): nothing to retry. */
  function unavailable(): void {
    saved = undefined;
    save();
    input.disabled = true;
    send.disabled = true;
    showNotice(t.unavailable);
  }

  function restart(): void {
    saved = undefined;
    save();
    messages = [];
    known = false;
    input.disabled = false;
    send.disabled = false;
    render();
    void start();
  }

  async function start(): Promise<boolean> {
    if (saved) return true;
    setBusy(true);
    clearNotice();
    try {
      const chat = await api.start();
      saved = { id: chat.id, token: chat.token, open: !panel.hidden };
      save();
      setBusy(false);
      show(chat.messages);
      await after(chat);
      return true;
    } catch (err) {
      setBusy(false);
      explain(err, () => void start());
      return false;
    }
  }

  /** What the chat's status asks for after a turn: the page's tools, or the end. */
  async function after(chat: ChatState, round = 0): Promise<void> {
    if (chat.status === 'ended') return ended();
    if (chat.status !== 'requires_action' || !saved || round >= MAX_TOOL_ROUNDS) return;
    const calls = chat.pending_tool_calls ?? [];
    const results: { tool_call_id: string; output: unknown }[] = [];
    setBusy(true);
    for (const call of calls) {
      let output: unknown;
      try {
        const handler = (window.VoiceAgentWidget ?? g).onToolCall;
        output = typeof handler === 'function' ? await handler({ id: call.id, name: call.name, arguments: call.arguments }) : { error: `This page does not answer the tool ${call.name}` };
      } catch (err) {
        output = { error: String((err as Error)?.message ?? err) };
      }
      results.push({ tool_call_id: call.id, output: output === undefined ? null : output });
    }
    const shown = live();
    try {
      const turn = await api.toolResults(saved.id, saved.token, results, shown.listen);
      setBusy(false);
      add(turn.messages, shown);
      await after(turn.chat, round + 1);
    } catch (err) {
      shown.drop();
      setBusy(false);
      explain(err, () => void after(chat, round));
    }
  }

  async function submit(text: string): Promise<void> {
    if (busy || !text.trim()) return;
    clearNotice();
    if (!saved && !(await start())) return;
    const mine = bubble({ id: '', role: 'user', content: text });
    log.insertBefore(mine, typing);
    input.value = '';
    setBusy(true);
    const shown = live(mine);
    try {
      const turn = await api.send(saved!.id, saved!.token, text, shown.listen);
      setBusy(false);
      add(turn.messages, shown);
      shown.mine?.remove();
      await after(turn.chat);
    } catch (err) {
      shown.drop();
      mine.remove();
      setBusy(false);
      if (!input.value) input.value = text;
      explain(err, () => void submit(input.value || text));
    }
  }

  /** Re-reads the saved chat (after a reload, or a 409) and draws it. */
  async function resume(): Promise<void> {
    if (!saved) return;
    try {
      const chat: Chat = await api.get(saved.id, saved.token);
      show(chat.messages);
      if (chat.status === 'ended') ended();
      else if (chat.status === 'requires_action') await after(chat);
    } catch (err) {
      explain(err, () => void resume());
    }
  }

  /** The launcher shows what it does: open the chat, or, while it is open, close it. */
  function launcherFor(isOpen: boolean): void {
    launcher.replaceChildren(icon(isOpen ? ICON_CLOSE : ICON_CHAT));
    launcher.setAttribute('aria-label', `${isOpen ? t.close : t.open}: ${config.title}`);
    launcher.setAttribute('aria-expanded', String(isOpen));
    // On a phone the open panel fills the screen and its head's button closes it (styles.ts).
    root.classList.toggle('open', isOpen);
  }

  /** Full screen on a phone: the panel takes the visual viewport, so the on-screen keyboard never covers the field. */
  function fit(): void {
    const vv = window.visualViewport;
    if (panel.hidden || !narrow?.matches || !vv) {
      panel.style.removeProperty('height');
      panel.style.removeProperty('top');
      return;
    }
    panel.style.height = `${Math.round(vv.height)}px`;
    panel.style.top = `${Math.round(vv.offsetTop)}px`;
    scroll();
  }

  function open(): void {
    if (!panel.hidden) return;
    panel.hidden = false;
    launcherFor(true);
    fit();
    if (saved) {
      saved.open = true;
      save();
    }
    input.focus();
    scroll();
    if (!saved && !busy) void start();
  }

  function close(): void {
    if (panel.hidden) return;
    panel.hidden = true;
    launcherFor(false);
    fit();
    if (saved) {
      saved.open = false;
      save();
    }
    launcher.focus();
  }

  launcher.onclick = () => (panel.hidden ? open() : close());
  closer.onclick = close;
  form.onsubmit = (ev) => {
    ev.preventDefault();
    void submit(input.value);
  };
  root.addEventListener('keydown', (ev) => {
    if ((ev as KeyboardEvent).key === 'Escape' && !panel.hidden) {
      ev.stopPropagation();
      close();
    }
  });
  g.open = open;
  g.close = close;
  window.visualViewport?.addEventListener('resize', fit);
  window.visualViewport?.addEventListener('scroll', fit);
  narrow?.addEventListener?.('change', fit);

  render();
  try {
    const raw = storage()?.getItem(key);
    const parsed = raw ? (JSON.parse(raw) as Saved) : undefined;
    if (parsed && typeof parsed.id === 'string' && typeof parsed.token === 'string') saved = parsed;
  } catch {
    saved = undefined;
  }
  (document.body || document.documentElement).appendChild(host);
  try {
    performance.mark('voice-agent-widget:launcher');
  } catch {
    /* no User Timing */
  }
  window.dispatchEvent(new CustomEvent('voice-agent-widget:ready', { detail: { widgetId } }));
  if (saved) {
    if (saved.open) {
      panel.hidden = false;
      launcherFor(true);
      fit();
    }
    void resume();
  }
}

async function boot(script: HTMLScriptElement | null): Promise<void> {
  const g: Global = (window.VoiceAgentWidget = window.VoiceAgentWidget ?? {});
  if (!script) return warn('cannot find its script element');
  const widgetId = script.getAttribute('data-widget-id') ?? '';
  if (!widgetId) return warn('its script element has no data-widget-id');
  if (document.querySelector(`[data-voice-agent-widget="${CSS.escape(widgetId)}"]`)) return;
  const base = script.getAttribute('data-api-base') || script.src.replace(/\/widget\/embed\.js([?#].*)?$/, '');
  const api = client(base.replace(/\/+$/, ''), widgetId);
  let config: WidgetConfig;
  try {
    config = await api.config();
  } catch (err) {
    return warn(`widget ${widgetId} is not available here:`, (err as Error).message);
  }
  if (!config || !config.agent) return warn(`widget ${widgetId} has no active agent`);
  if (document.readyState === 'loading') await new Promise((r) => document.addEventListener('DOMContentLoaded', r, { once: true }));
  mount(api, config, widgetId, g);
}

try {
  const script = (document.currentScript as HTMLScriptElement | null) ?? document.querySelector<HTMLScriptElement>('script[data-widget-id][src*="/widget/embed.js"]');
  boot(script).catch((err) => warn(err));
} catch (err) {
  warn(err);
}
