"""A small OpenID Connect provider (django-oidc-provider) the tests sign in against; see
serve.py. A Django project of its own: nothing here imports the console."""
