// The developer console: signs in with a development token, then wires the REST client, the
// WebSocket (events and recording commands) and the views. `window.miConsole` exposes a few
// debug hooks (the browser test drops the socket through it).
import { LiveConnection, type ConnectionStatus } from '@mi/client';
import { Api, ApiProblem } from './api';
import { AccountExportPanel } from './views/account-export';
import { RecordingSession } from './recording';
import type { ServerMessage } from './types';
import { errText, fill, h } from './views/dom';
import { MeetingView } from './views/meeting';
import { MeetingsList } from './views/meetings';
import { SearchPane } from './views/search';
import { signInView } from './views/sign-in';
import { WebhooksPage } from './views/webhooks';
import './styles.css';

interface Settings {
  devMint: boolean;
  appEnv: string;
  maxChunkBytes: number;
  /** ML_TASK_CADENCE_SEGMENTS: the tasks panel says when tasks arrive. */
  taskCadenceSegments: number;
}

const TOKEN_KEY = 'mi-console-token';
const settings = JSON.parse(document.getElementById('console-settings')!.textContent!) as Settings;
const root = document.getElementById('root')!;

declare global {
  interface Window {
    miConsole?: unknown;
  }
}

function showSignIn(error?: string) {
  fill(
    root,
    h(
      'header',
      { class: 'top' },
      h('h1', {}, 'Meeting Intelligence · developer console'),
      h('span', { class: 'muted' }, `APP_ENV=${settings.appEnv}`),
    ),
    signInView({ devMint: settings.devMint, error, onToken: (t) => void signIn(t) }),
  );
}

async function signIn(token: string) {
  // One client id per tab: the server suppresses the echo of this tab's own REST changes.
  const clientId = crypto.randomUUID();
  const api = new Api(token, clientId);
  try {
    const me = await api.me();
    localStorage.setItem(TOKEN_KEY, token);
    start(api, token, clientId, me.username);
  } catch (err) {
    localStorage.removeItem(TOKEN_KEY);
    showSignIn(
      err instanceof ApiProblem && err.status === 401
        ? 'The server refused this token (expired, or signed with another key).'
        : errText(err),
    );
  }
}

function start(api: Api, token: string, clientId: string, username: string) {
  const conn = h('span', { id: 'conn-state', class: 'badge' }, 'connecting…');
  const main = h('main', { id: 'meeting-pane' }, h('section', { class: 'card muted' }, 'Open or create a meeting.'));
  let view: MeetingView | null = null;

  // The recording session follows the socket itself (resume on every reconnect).
  const socket = new LiveConnection({
    url: `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`,
    token,
    clientId,
    onStatus: (s) => {
      showStatus(conn, s);
      if (s.state === 'closed' && s.code === 4401) showSignIn(s.reason);
    },
    onMessage: (msg) => {
      view?.onEvent(msg as ServerMessage);
      if (msg.type === 'EntityChanged' && msg.entity === 'meeting' && msg.action !== 'updated')
        void meetings.load(false);
      if (msg.type === 'EntityChanged' && msg.entity === 'account_export') void accountExport.load();
    },
  });
  const session = new RecordingSession({
    api,
    socket,
    maxChunkBytes: settings.maxChunkBytes,
    onChange: () => view?.recordingChanged(),
    onFinalized: (id) => void (view?.meetingId === id && view.recordingFinalized()),
  });

  // The open meeting lives in the URL (#/meetings/<id>): a reload reopens it, back/forward
  // move between meetings. The hash is the one source of truth; hashchange opens what it names.
  let opening = 0;
  const open = async (id: string | null) => {
    const mine = ++opening; // a later navigation wins over a slower earlier one
    view?.close();
    view = null;
    meetings.mark(id);
    if (!id) return fill(main, h('section', { class: 'card muted' }, 'Open or create a meeting.'));
    try {
      const meeting = await api.getMeeting(id);
      if (mine !== opening) return;
      view = new MeetingView(api, meeting, session, () => socket.drop(), settings.taskCadenceSegments);
      fill(main, view.el);
      await view.load();
    } catch (err) {
      if (mine === opening) fill(main, h('section', { class: 'card error' }, errText(err)));
    }
  };
  const meetings = new MeetingsList(api, (id) => {
    if (location.hash === meetingHash(id)) void open(id);
    else location.hash = meetingHash(id);
  });
  // #/webhooks is the webhooks page; any other hash names a meeting (or none).
  const webhooks = new WebhooksPage(api);
  const route = () => {
    if (location.hash !== WEBHOOKS_HASH) return void open(meetingInHash());
    ++opening; // a meeting still loading does not replace the page
    view?.close();
    view = null;
    meetings.mark(null);
    fill(main, webhooks.el);
    void webhooks.show();
  };
  addEventListener('hashchange', route);
  const search = new SearchPane(api, (id) => (location.hash = meetingHash(id)));
  const accountExport = new AccountExportPanel(api);

  const signOut = h(
    'button',
    {
      id: 'sign-out',
      class: 'link',
      onclick: () => {
        socket.close();
        localStorage.removeItem(TOKEN_KEY);
        location.reload();
      },
    },
    'sign out',
  );
  fill(
    root,
    h(
      'header',
      { class: 'top' },
      h('h1', {}, 'Meeting Intelligence · developer console'),
      h('span', {}, 'signed in as ', h('strong', { id: 'user-name' }, username)),
      conn,
      h('a', { id: 'open-webhooks', class: 'link', href: WEBHOOKS_HASH }, 'webhooks'),
      signOut,
    ),
    h('div', { class: 'layout' }, h('div', { class: 'sidebar' }, search.el, meetings.el, accountExport.el), main),
  );
  socket.connect();
  void meetings.load(false);
  void accountExport.load();
  route();

  window.miConsole = {
    dropSocket: () => socket.drop(),
    loseFrames: (n: number) => session.loseFrames(n),
    socketStatus: () => socket.status,
    recording: () => session.snapshot,
  };
}

const meetingHash = (id: string) => `#/meetings/${id}`;
const WEBHOOKS_HASH = '#/webhooks';
/** The meeting the URL names; anything but a UUID is ignored (it could only answer 404/422). */
function meetingInHash(): string | null {
  const m = /^#\/meetings\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i.exec(location.hash);
  return m ? m[1] : null;
}

function showStatus(el: HTMLElement, s: ConnectionStatus) {
  el.className = `badge ${s.state}`;
  if (s.state === 'ready') el.textContent = 'connected';
  else if (s.state === 'connecting')
    el.textContent = s.attempt ? `reconnecting (attempt ${s.attempt})…` : 'connecting…';
  else if (s.state === 'waiting')
    el.textContent = `disconnected (${s.lastClose}); retry in ${Math.ceil((s.retryAt - Date.now()) / 1000)} s`;
  else el.textContent = `closed: ${s.reason}`;
}

const saved = localStorage.getItem(TOKEN_KEY);
if (saved) void signIn(saved);
else showSignIn();
