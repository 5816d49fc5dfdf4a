package checks

// All is every check, in the order reports list them. To add a check,
// write its file and add it here.
var All = []*Check{
	serviceMissing,
	nodePortMissing,
	hookJumpMissing,
	masqueradeMissing,
	externalMissing,
	endpointStale,
	endpointMissing,
	noEndpointsUnrejected,
	servicesUnprogrammed,
	servicesWithoutEndpoints,
	orphanRules,
	affinityMismatch,
	trafficPolicyMismatch,
	loadBalanceSkew,
	iptablesBackendMixed,
	foreignRules,
	configInvalid,
	configNotApplied,
	clusterCIDRUncovered,
	ipvsSchedulerInvalid,
	ipvsSchedulerMismatch,
	ipvsModuleMissing,
	modeMismatch,
	modeUnsupported,
	rulesetInvalid,
	serviceUnreachable,
	syncSlow,
	syncStale,
	syncFailures,
	rulesetScale,
	sysctlUnsafe,
	kubeProxyUnhealthy,
	logErrors,
	conntrackStale,
	clusterIPOutsideServiceCIDR,
	nodeDrift,
}

// ByID returns the check with the given ID, or nil.
func ByID(id string) *Check {
	for _, c := range All {
		if c.ID == id {
			return c
		}
	}
	return nil
}
