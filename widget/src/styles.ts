/**
 * The widget's stylesheet, inside its shadow root. The page's rules never match inside it; what
 * could still reach in is inheritance from the host and rules on the host element itself, so
 * the host resets everything with `all: initial !important` (an `!important` declaration of the
 * shadow tree wins over the page's, even the page's `!important`) and every element below sets
 * its own font, colour, box and spacing explicitly.
 */
export function styles(color: string, onColor: string, left: boolean): string {
  const side = left ? 'left' : 'right';
  return `
:host{all:initial!important;display:block!important;position:fixed!important;${side}:16px!important;bottom:16px!important;z-index:2147483000!important;width:auto!important;height:auto!important;margin:0!important;padding:0!important;border:0!important;background:none!important;transform:none!important;visibility:visible!important;opacity:1!important;contain:none!important}
*{box-sizing:border-box;margin:0;padding:0;border:0;font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;font-size:14px;font-weight:400;font-style:normal;line-height:1.45;letter-spacing:normal;text-transform:none;text-align:left;text-decoration:none;text-shadow:none;color:#0f172a;background:none;visibility:visible}
.root{display:block;position:relative}
.launcher{display:flex;align-items:center;justify-content:center;width:56px;height:56px;border-radius:28px;background:${color};color:${onColor};cursor:pointer;box-shadow:0 4px 14px rgba(15,23,42,.25);transition:transform .15s}
.launcher:hover{transform:scale(1.05)}
.launcher svg{width:26px;height:26px;fill:${onColor};display:block}
.launcher:focus-visible,.btn:focus-visible,.icon:focus-visible,.input:focus-visible,a:focus-visible{outline:3px solid ${color};outline-offset:2px}
.launcher:focus-visible{outline-color:#0f172a}
.panel{display:flex;flex-direction:column;position:fixed;${side}:16px;bottom:84px;width:380px;max-width:calc(100vw - 32px);height:560px;max-height:calc(100vh - 100px);background:#fff;border-radius:14px;box-shadow:0 10px 40px rgba(15,23,42,.28);overflow:hidden}
.panel[hidden]{display:none}
@media (max-width:479.98px){.panel{left:0;right:0;top:0;bottom:auto;width:100%;max-width:none;height:100vh;height:100dvh;max-height:none;border-radius:0}.input{font-size:16px}.open .launcher{display:none}}
.head{display:flex;align-items:center;gap:10px;padding:12px 12px 12px 16px;background:${color};color:${onColor}}
.avatar{display:flex;align-items:center;justify-content:center;flex:none;width:32px;height:32px;border-radius:16px;background:#fff;color:#0f172a;font-weight:600;overflow:hidden}
.avatar img{width:32px;height:32px;display:block;object-fit:cover}
.title{flex:1;font-size:16px;font-weight:600;color:${onColor};overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.icon{display:flex;align-items:center;justify-content:center;width:32px;height:32px;border-radius:8px;background:none;color:${onColor};cursor:pointer}
.icon svg{width:18px;height:18px;fill:${onColor};display:block}
.log{flex:1;overflow-y:auto;padding:14px;display:flex;flex-direction:column;gap:10px;background:#fff}
.msg{display:block;max-width:85%;padding:9px 12px;border-radius:12px;white-space:pre-wrap;word-wrap:break-word;overflow-wrap:anywhere}
.agent{align-self:flex-start;background:#f1f5f9;color:#0f172a;border-bottom-left-radius:4px}
.user{align-self:flex-end;background:${color};color:${onColor};border-bottom-right-radius:4px}
.src{display:block;margin-top:6px;font-size:12px;color:#334155}
.src a{display:inline-block;margin-right:8px;font-size:12px;color:#1d4ed8;text-decoration:underline;word-break:break-all}
.typing{display:flex;align-self:flex-start;gap:4px;padding:12px;background:#f1f5f9;border-radius:12px}
.typing[hidden],.notice[hidden]{display:none}
.dot{display:block;width:7px;height:7px;border-radius:4px;background:#475569;animation:b 1s infinite}
.dot:nth-child(2){animation-delay:.15s}.dot:nth-child(3){animation-delay:.3s}
@keyframes b{0%,80%,100%{opacity:.3}40%{opacity:1}}
@media (prefers-reduced-motion:reduce){.dot{animation:none}.launcher{transition:none}}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
.notice{display:flex;align-items:center;gap:8px;margin:0 12px 8px;padding:8px 10px;border-radius:8px;background:#fef2f2;color:#7f1d1d;font-size:13px}
.notice span{flex:1;color:#7f1d1d;font-size:13px}
.btn{display:inline-block;padding:6px 10px;border-radius:8px;background:${color};color:${onColor};font-size:13px;font-weight:600;cursor:pointer}
.form{display:flex;gap:8px;padding:10px 12px;border-top:1px solid #e2e8f0;background:#fff}
.input{flex:1;min-width:0;padding:9px 12px;border:1px solid #94a3b8;border-radius:10px;background:#fff;color:#0f172a}
.input::placeholder{color:#64748b;opacity:1}
.send{display:flex;align-items:center;justify-content:center;flex:none;width:40px;height:40px;border-radius:10px;background:${color};cursor:pointer}
.send svg{width:18px;height:18px;fill:${onColor};display:block}
.send:disabled,.input:disabled{opacity:.6;cursor:default}
`;
}
