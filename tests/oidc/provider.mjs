// A real OpenID provider for the sign-in tests (tests/web/test_oidc_browser.py): panva's oidc-provider, on
// loopback, with its own login and consent pages (devInteractions: any password is taken, the login name is
// the account). Run as: node provider.mjs PORT CONFIG_JSON, where CONFIG_JSON gives the client's id, secret,
// redirect URIs and post-logout redirect URIs. Prints "listening" once it serves.
import Provider from "oidc-provider";

const [port, configText] = process.argv.slice(2);
const config = JSON.parse(configText);
const issuer = `http://127.0.0.1:${port}`;

// The people the provider knows, by login name: one verified email, one not, one the OKR service does not
// know, one it knows but has deactivated, and another account with Maya's email, verified (an alias, a
// recycled mailbox), which must not take over Maya's account here.
const ACCOUNTS = {
  maya: { email: "maya@example.com", email_verified: true, name: "Maya Admin" },
  mallory: { email: "maya@example.com", email_verified: true, name: "Mallory Other" },
  una: { email: "una@example.com", email_verified: false, name: "Una Verified" },
  nia: { email: "nia@example.com", email_verified: true, name: "Nia Newcomer" },
  ina: { email: "ina@example.com", email_verified: true, name: "Ina Active" },
};

const provider = new Provider(issuer, {
  clients: [{
    client_id: config.client_id,
    client_secret: config.client_secret,
    redirect_uris: config.redirect_uris,
    post_logout_redirect_uris: config.post_logout_redirect_uris,
    grant_types: ["authorization_code"],
    response_types: ["code"],
    token_endpoint_auth_method: "client_secret_basic",
  }],
  async findAccount(ctx, id) {
    const account = ACCOUNTS[id];
    if (!account) return undefined;
    return { accountId: id, async claims() { return { sub: id, ...account }; } };
  },
  claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"] },
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
  // The dev keys oidc-provider would make for itself are the same for every run: these are this run's own.
  jwks: { keys: [config.signing_key] },
});

// A provider-side hook for the wrong-nonce test: while on, an authorization request's nonce is replaced, so
// the ID token carries a nonce the OKR service never sent.
let wrongNonce = false;
provider.use(async (ctx, next) => {
  if (ctx.path === "/test/wrong-nonce") {
    wrongNonce = ctx.query.on === "1";
    ctx.body = { wrongNonce };
    return;
  }
  if (wrongNonce && ctx.path === "/auth" && ctx.query.nonce) {
    const params = new URLSearchParams(ctx.querystring);
    params.set("nonce", "a-nonce-the-okr-service-never-sent");
    ctx.querystring = params.toString();
  }
  await next();
});

provider.listen(Number(port), "127.0.0.1", () => console.log("listening"));
