// Sign-in: paste a development token, or (APP_ENV=development only) mint one by name.
import { mintDevToken } from '../api';
import { errText, h } from './dom';

export function signInView(opts: { devMint: boolean; error?: string; onToken(token: string): void }): HTMLElement {
  const tokenInput = h('textarea', {
    id: 'token-input',
    rows: 4,
    placeholder: 'eyJhbGciOiJIUzI1NiIs…  (npm run token -- alice)',
  });
  const message = h('p', { id: 'sign-in-error', class: 'error' }, opts.error ?? '');
  const submit = () => {
    const token = tokenInput.value.trim();
    if (token) opts.onToken(token);
    else message.textContent = 'paste a token first';
  };

  const mint = () => {
    const nameInput = h('input', { id: 'mint-name', value: 'alice', 'aria-label': 'user name' });
    const button = h(
      'button',
      {
        id: 'mint',
        onclick: async () => {
          button.disabled = true;
          try {
            opts.onToken(await mintDevToken(nameInput.value.trim()));
          } catch (err) {
            message.textContent = errText(err);
          } finally {
            button.disabled = false;
          }
        },
      },
      'Mint a development token',
    );
    return h(
      'div',
      { class: 'mint' },
      h('h3', {}, 'Development'),
      h('p', {}, 'Signs a user token with the local IDENTITY_SECRET_KEY (APP_ENV=development only).'),
      h('div', { class: 'row' }, nameInput, button),
    );
  };

  return h(
    'section',
    { id: 'sign-in', class: 'card narrow' },
    h('h2', {}, 'Sign in'),
    h('p', {}, 'A user token (JWT) for this stack. ', h('code', {}, 'npm run token -- alice'), ' prints one.'),
    tokenInput,
    h('div', { class: 'row' }, h('button', { id: 'sign-in-button', onclick: submit }, 'Sign in')),
    opts.devMint && mint(),
    message,
  );
}
