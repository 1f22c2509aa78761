"""The audit trail: who wrote what, when, one event per write, recorded by the service that makes the write in
its own transaction. The kinds of object an event names are registered by the apps that own them."""
