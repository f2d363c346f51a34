"""Accounts: who may do what, passwords, sign-in and its throttle, sessions, password links, identity provider."""
