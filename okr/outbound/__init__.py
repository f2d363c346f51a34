"""What the service sends out, one module per job: smtp (email settings and sending one message), weekly (the
check-in reminders and team digests, once a week), chat_digest (the digest posted to chat webhooks),
webhook_request (one signed webhook request, to an address checked after DNS) and webhook_queue (the
background sender of each hook's waiting events, in order, with retries).
"""
