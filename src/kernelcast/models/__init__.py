"""Performance models: the fitted linear model of the paper (kernelcast.models.linear) and
its device profiles (kernelcast.models.profile)."""
